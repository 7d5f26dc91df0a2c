import HTTPTypes

extension ResponseHead {
    /// The fields as `HTTPFields`, in the order received, each as swift-http-types makes it
    /// from the bytes received leniently: a value that is not UTF-8 keeps its bytes, and a
    /// field whose name is not a token (curl passes such lines on) is left out.
    ///
    /// Made for what it costs: swift-http-types validates each value as UTF-8 through
    /// unspecialized generic code and lowercases each name, most of what an `HTTPFields` of a
    /// small response costs (Docs/Performance.md, "Fixed so far"). Here a common name is not
    /// made again (``CommonFieldNames``) and a plain ASCII value becomes its `String`
    /// directly, one field at a time (swift-http-types' `replaceSubrange`, to append them at
    /// once, is generic too).
    /// `HTTPTypesConversion.fieldNamesKeepTheirSpelling` holds the result to the library's own.
    var httpFields: HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(fieldCount)
        forEachField { name, value in
            guard let name = CommonFieldNames.name(spelled: name)
                ?? HTTPField.Name(String(decoding: name, as: UTF8.self)) else { return }
            fields.append(Self.isPlainASCII(value)
                ? HTTPField(name: name, value: String(decoding: value, as: UTF8.self))
                : HTTPField(name: name, lenientValue: value))
        }
        return fields
    }

    /// A value every reading takes as it is: visible ASCII, with spaces and tabs inside only.
    /// For such a value swift-http-types' legal (`value:`) and lenient (`lenientValue:`)
    /// readings make the same field; for any other the lenient one is taken.
    private static func isPlainASCII(_ value: ArraySlice<UInt8>) -> Bool {
        guard let first = value.first, let last = value.last else { return true }
        guard first != 0x20, first != 0x09, last != 0x20, last != 0x09 else { return false }
        return value.allSatisfy { (0x21...0x7E).contains($0) || $0 == 0x20 || $0 == 0x09 }
    }
}

/// The field names responses most often carry, made once.
///
/// Made from the bytes received, a name costs a `String`, a token check and, when it is not
/// in lowercase (an HTTP/1.1 server's `Content-Type`), a lowercased copy. A name found here
/// costs a comparison of bytes instead, and keeps the spelling received: it is found only
/// when spelled exactly as one of these.
enum CommonFieldNames {
    /// Each name with its spelling's bytes: as HTTP/1.1 servers write them, then lowercase as
    /// HTTP/2 and HTTP/3 send them.
    private static let known: [(spelling: [UInt8], name: HTTPField.Name)] = {
        let spellings = [
            "Accept-Ranges", "Access-Control-Allow-Origin", "Age", "Cache-Control", "Connection",
            "Content-Encoding", "Content-Length", "Content-Range", "Content-Type", "Date", "ETag",
            "Expires", "Keep-Alive", "Last-Modified", "Location", "Server", "Set-Cookie",
            "Strict-Transport-Security", "Transfer-Encoding", "Vary", "Via", "WWW-Authenticate",
            "X-Content-Type-Options",
        ]
        return (spellings + spellings.map { $0.lowercased() }).compactMap { spelling in
            HTTPField.Name(spelling).map { (Array(spelling.utf8), $0) }
        }
    }()

    /// The name spelled exactly `bytes`, if it is a common one.
    static func name(spelled bytes: ArraySlice<UInt8>) -> HTTPField.Name? {
        known.first { $0.spelling.count == bytes.count && $0.spelling.elementsEqual(bytes) }?.name
    }
}
