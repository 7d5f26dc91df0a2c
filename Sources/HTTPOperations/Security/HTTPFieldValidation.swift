import Foundation

/// Refuses header fields and methods that would split a request (RFC 9110 §5.1, §5.5, §9.1):
/// a CR or LF in a value starts a new header line or a new request on the wire, a NUL
/// truncates it in C code. Checked wherever a request is put together (the request
/// serializer, multipart part headers) and once more before every transfer, whatever built
/// the `URLRequest`.
enum HTTPFieldValidation {
    /// Throws unless `name` is a token and `value` holds no CR, LF or NUL.
    ///
    /// - Throws: ``SecurityError`` `.invalidHeaderField` naming the field.
    static func check(name: String, value: String, url: URL? = nil) throws {
        guard isToken(name), isFieldValue(value) else {
            throw SecurityError(.invalidHeaderField(name: name), url: url)
        }
    }

    /// Throws unless `method` is a token.
    ///
    /// - Throws: ``SecurityError`` `.invalidMethod`.
    static func check(method: String, url: URL? = nil) throws {
        guard isToken(method) else { throw SecurityError(.invalidMethod(method), url: url) }
    }

    /// `token = 1*tchar`: letters, digits and ``!#$%&'*+-.^_`|~``.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.withBytes { bytes in
            bytes.allSatisfy(isTokenByte)
        }
    }

    /// A field value holds no CR, LF or NUL (other bytes, obs-text included, are the
    /// server's to judge).
    static func isFieldValue(_ text: String) -> Bool {
        text.utf8.withBytes { bytes in
            !bytes.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
        }
    }

    /// Whether `byte` is a `tchar` (a switch, not a table: checked on every request, it
    /// touches no global).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}

private extension String.UTF8View {
    /// Runs `body` over the bytes without copying when the string is native UTF-8 (almost
    /// always), else over a copy.
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = withContiguousStorageIfAvailable(body) { return result }
        return Array(self).withUnsafeBufferPointer(body)
    }
}
