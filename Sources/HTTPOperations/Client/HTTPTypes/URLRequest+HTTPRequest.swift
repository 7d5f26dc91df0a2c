import Foundation
import HTTPTypes
import HTTPTypesFoundation

extension URLRequest {
    /// `request` as Foundation's request: what swift-http-types' `URLRequest(httpRequest:)`
    /// makes (its URL, its method, its fields with repeated ones joined by `, `, cookies by
    /// `; `), made here for what it costs, with one difference: a value's bytes reach the wire
    /// as they are. The library reads them as ISO-8859-1 for Foundation, whose transport
    /// writes ISO-8859-1 back; ours writes a header string's UTF-8, so `é` (`c3 a9`) went out
    /// as `c3 83 c2 a9`. A value that is UTF-8 is kept as its text; one that is not cannot be
    /// carried by a string (the door refuses it before: ``HTTPRequestOperationManager``).
    ///
    /// The library sets the method on every request, a GET's too, through Foundation's
    /// `httpMethod` setter, which normalizes what it is given; a GET is Foundation's default,
    /// so here it is left alone. The fields are joined as the library joins them.
    /// `HTTPTypesConversion.itMakesWhatTheLibraryMakes` holds it to the library's result.
    ///
    /// Nil when the request names no URL (a path alone, say).
    init?(sending request: HTTPRequest) {
        // An extended CONNECT (a WebSocket over HTTP/2) becomes a GET of ws: or wss: in the
        // library's conversion: its rules, not copied here.
        if request.method == .connect {
            self.init(httpRequest: request)
            return
        }
        guard let url = request.url else { return nil }
        self.init(url: url)
        if request.method != .get { httpMethod = request.method.rawValue }
        var joined: [HTTPField.Name: String] = Dictionary(minimumCapacity: request.headerFields.count)
        for field in request.headerFields {
            let value = field.wireValue
            if let earlier = joined[field.name] {
                joined[field.name] = earlier + (field.name == .cookie ? "; " : ", ") + value
            } else {
                joined[field.name] = value
            }
        }
        allHTTPHeaderFields = Dictionary(uniqueKeysWithValues: joined.map { ($0.key.rawName, $0.value) })
    }
}

extension HTTPField {
    /// The value as the string whose UTF-8 is its bytes; for bytes that are not UTF-8, their
    /// ISO-8859-1 reading (one character per byte), as the library makes.
    fileprivate var wireValue: String {
        if value.utf8.allSatisfy({ $0 < 0x80 }) { return value }
        return withUnsafeBytesOfValue { bytes in
            String(validating: bytes, as: UTF8.self)
                ?? String(String.UnicodeScalarView(bytes.lazy.map { Unicode.Scalar($0) }))
        }
    }

    /// Whether the value's bytes are UTF-8 (ASCII included): whether a header string can
    /// carry them to the wire as they are.
    var valueIsUTF8: Bool {
        withUnsafeBytesOfValue { String(validating: $0, as: UTF8.self) != nil }
    }
}
