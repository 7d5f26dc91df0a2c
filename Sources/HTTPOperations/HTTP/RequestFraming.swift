import Foundation

/// The fields that say where a request ends and whom it is for (`Content-Length`,
/// `Transfer-Encoding`, `Host`) are the library's: curl writes them from the body and the URL.
/// A caller's value is sent only when it says the same. One that disagrees would let the
/// server read the bytes as other requests than the one sent (`Content-Length: 0` before a
/// body: the body becomes a second request, RFC 9112 §11.2), so it is refused before anything
/// is sent, whichever door built the request.
enum RequestFraming {
    /// Throws unless every framing field in `headers` agrees with `body` and `url`.
    ///
    /// - Parameters:
    ///   - headers: The caller's header fields.
    ///   - body: What will be sent as the body.
    ///   - url: The request's URL (the authority `Host` must name).
    /// - Throws: ``SecurityError`` `.framingFieldMismatch` naming the field.
    static func check(_ headers: [(name: String, value: String)], body: RequestBody, url: URL) throws {
        var contentLength: String?
        var transferEncoding: String?
        // Checked for every request, off the network thread: names compared without
        // allocating a lower-cased copy of each.
        for (name, value) in headers {
            if isNamed(name, "content-length") {
                contentLength = value.trimmingCharacters(in: .whitespaces)
            } else if isNamed(name, "transfer-encoding") {
                transferEncoding = value.trimmingCharacters(in: .whitespaces)
            } else if isNamed(name, "host"), !names(value, authorityOf: url) {
                throw refusal("Host", "it names \(value), the URL \(url.host ?? "")", url)
            }
        }
        // A written body declares its own length: the caller's field must say the same.
        if case .stream(let stream, _) = body, let written = (stream.value as? StreamedRequestBody)?.length,
           let contentLength, HTTPDecimal.parse(contentLength) != written {
            throw refusal("Content-Length", "it says \(contentLength), the written body declares \(written) bytes", url)
        }
        if let transferEncoding {
            guard contentLength == nil else { throw refusal("Transfer-Encoding", "sent with a Content-Length", url) }
            guard transferEncoding.lowercased() == "chunked", case .stream(_, nil) = body else {
                throw refusal("Transfer-Encoding", "'\(transferEncoding)': only a body of unknown length is sent chunked", url)
            }
        }
        guard let contentLength else { return }
        guard let declared = HTTPDecimal.parse(contentLength) else {
            throw refusal("Content-Length", "'\(contentLength)' is not a length", url)
        }
        let length: Int64? = switch body {
        case .none: 0
        case .data(let data): Int64(data.count)
        case .stream(_, let length): length
        }
        guard declared == length else {
            throw refusal("Content-Length", "it says \(declared), the body has \(length.map(String.init) ?? "an unknown number of") bytes", url)
        }
    }

    /// Whether a `Host` value names the URL's authority: its host (any case, IPv6 in
    /// brackets) and its port, which may be left out when it is the scheme's default.
    static func names(_ value: String, authorityOf url: URL) -> Bool {
        guard let host = url.host?.lowercased() else { return false }
        let text = value.trimmingCharacters(in: .whitespaces).lowercased()
        let named: Substring
        let port: Substring?
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            named = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return false }
            port = rest.isEmpty ? nil : rest.dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            (named, port) = (text[..<colon], text[text.index(after: colon)...])
        } else {
            (named, port) = (text[...], nil)
        }
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        guard named == bareHost else { return false }
        let defaultPort = url.scheme?.lowercased() == "https" ? 443 : 80
        let expected = url.port ?? defaultPort
        guard let port else { return expected == defaultPort }
        return HTTPDecimal.parse(port) == Int64(expected)
    }

    /// Whether `name` is `lowercased` in any case (ASCII).
    private static func isNamed(_ name: String, _ lowercased: StaticString) -> Bool {
        let utf8 = name.utf8
        guard utf8.count == lowercased.utf8CodeUnitCount else { return false }
        let expected = UnsafeBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
        return zip(utf8, expected).allSatisfy { ((0x41...0x5A).contains($0) ? $0 | 0x20 : $0) == $1 }
    }

    private static func refusal(_ name: String, _ detail: String, _ url: URL) -> SecurityError {
        SecurityError(.framingFieldMismatch(name: name, detail: detail), url: url)
    }
}
