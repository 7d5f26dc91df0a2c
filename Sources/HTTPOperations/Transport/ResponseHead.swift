import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The status line and header fields of one HTTP response, as they came off the wire.
struct ResponseHead: Sendable, Equatable {
    /// The status code, such as 200.
    var statusCode: Int
    /// The protocol from the status line, such as `HTTP/1.1` or `HTTP/2`.
    var httpVersion: String
    /// Header fields in the order received; names keep the server's spelling.
    var fields: [(name: String, value: String)]

    static func == (lhs: ResponseHead, rhs: ResponseHead) -> Bool {
        lhs.statusCode == rhs.statusCode && lhs.httpVersion == rhs.httpVersion
            && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The first value of the field `name`, compared case-insensitively (ASCII, as field
    /// names are).
    func value(of name: String) -> String? {
        fields.first { fieldNamesMatch($0.name, name) }?.value
    }

    /// The body length the `Content-Length` announces, when the body is not content-encoded
    /// (an encoded body's length counts other bytes than the decoded ones we store).
    var decodedContentLength: Int64? {
        let encoded = value(of: "Content-Encoding").map { $0.lowercased() != "identity" } ?? false
        return encoded ? nil : value(of: "Content-Length").flatMap(Int64.init)
    }

    /// Whether this is an interim (1xx) response that another head will follow.
    var isInterim: Bool { (100..<200).contains(statusCode) && statusCode != 101 }

    /// The Foundation response for `url`. Repeated fields are joined with ", " as RFC 9110
    /// §5.3 allows, since `HTTPURLResponse` holds one value per name.
    func httpURLResponse(for url: URL) -> HTTPURLResponse {
        var merged: [String: String] = [:]
        var spelling: [String: String] = [:]
        for (name, value) in fields {
            let key = name.lowercased()
            if let existing = spelling[key] {
                merged[existing]! += ", " + value
            } else {
                spelling[key] = name
                merged[name] = value
            }
        }
        return HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: merged)!
    }
}

/// Turns the header lines curl hands us, one callback per line, into ``ResponseHead`` values.
///
/// One transfer can see several heads: interim 1xx responses, and the 401 that curl answers
/// itself when it negotiates Digest authentication. Each blank line completes one.
struct ResponseHeadParser {
    private var statusCode: Int?
    private var httpVersion = ""
    private var fields: [(name: String, value: String)] = []

    /// Feeds one line, including its CRLF. Returns the head when the line completes one.
    ///
    /// Works on the bytes: this runs for every header line on the network thread.
    mutating func consume(line bytes: UnsafeRawBufferPointer) -> ResponseHead? {
        let line = trimmed(bytes, from: 0, to: bytes.count)
        if line.isEmpty {
            defer { self = ResponseHeadParser() }
            guard let statusCode else { return nil }
            return ResponseHead(statusCode: statusCode, httpVersion: httpVersion, fields: fields)
        }
        if line.starts(with: "HTTP/".utf8) {
            // A new status line starts a new head, whatever came before.
            self = ResponseHeadParser()
            let parts = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            httpVersion = String(decoding: parts[0], as: UTF8.self)
            statusCode = parts.count > 1 ? Int(String(decoding: parts[1], as: UTF8.self)) : nil
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let name = trimmed(bytes, from: line.startIndex, to: colon)
            let value = trimmed(bytes, from: colon + 1, to: line.endIndex)
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        } else if let last = fields.indices.last, bytes.first == UInt8(ascii: " ") || bytes.first == UInt8(ascii: "\t") {
            // Obsolete line folding (RFC 9112 §5.2): a continuation of the previous value.
            fields[last].value += " " + String(decoding: line, as: UTF8.self)
        }
        return nil
    }

    /// `bytes[start..<end]` without leading and trailing spaces, tabs, CR and LF.
    private func trimmed(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Slice<UnsafeRawBufferPointer> {
        func isSpace(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
        }
        var lower = start
        var upper = end
        while lower < upper, isSpace(bytes[lower]) { lower += 1 }
        while upper > lower, isSpace(bytes[upper - 1]) { upper -= 1 }
        return bytes[lower..<upper]
    }
}

/// `byte` lower-cased if it is an ASCII capital letter.
@inline(__always)
func asciiLowercased(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
}

/// Whether two header field names are the same name: ASCII letters compared without case,
/// as RFC 9110 §5.1 says, without Foundation's locale-aware comparison.
func fieldNamesMatch(_ lhs: String, _ rhs: String) -> Bool {
    // Native strings know their length and lend their bytes: most names differ in length,
    // and the rest are compared without the generic iterator (1.6% of the network thread's
    // time for small GETs when they went through `elementsEqual`).
    guard lhs.utf8.count == rhs.utf8.count else { return false }
    let compared = lhs.utf8.withContiguousStorageIfAvailable { left in
        rhs.utf8.withContiguousStorageIfAvailable { right in
            zip(left, right).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
        }
    }
    if let compared = compared ?? nil { return compared }
    return lhs.utf8.elementsEqual(rhs.utf8) { asciiLowercased($0) == asciiLowercased($1) }
}
