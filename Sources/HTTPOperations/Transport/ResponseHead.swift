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

    /// The first value of the field `name`, compared case-insensitively.
    func value(of name: String) -> String? {
        fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
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
    mutating func consume(line bytes: UnsafeRawBufferPointer) -> ResponseHead? {
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == UInt8(ascii: "\r") {
            end -= 1
        }
        if end == 0 {
            defer { self = ResponseHeadParser() }
            guard let statusCode else { return nil }
            return ResponseHead(statusCode: statusCode, httpVersion: httpVersion, fields: fields)
        }
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<end]), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            // A new status line starts a new head, whatever came before.
            self = ResponseHeadParser()
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            httpVersion = parts.first.map(String.init) ?? "HTTP/1.1"
            statusCode = parts.count > 1 ? Int(parts[1]) : nil
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            fields.append((name, value))
        } else if let last = fields.indices.last, line.first == " " || line.first == "\t" {
            // Obsolete line folding (RFC 9112 §5.2): a continuation of the previous value.
            fields[last].value += " " + line.trimmingCharacters(in: .whitespaces)
        }
        return nil
    }
}
