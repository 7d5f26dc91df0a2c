import Foundation

/// Sees where an HTTP/1.x response body ends, from the bytes as they came off the connection.
///
/// Why: libcurl ends an HTTP/1.1 transfer only when both directions are done. A response that
/// is complete while its request body is still open (a duplex exchange whose caller ends its
/// body only once the response has ended, as the Swift HTTP client API's conformance suite
/// does) is then never delivered: curl read its last byte and waits for the request body,
/// which waits for the response's end. curl tells its application nothing when a body ends
/// (its decoded bytes keep no framing); its debug callback's `CURLINFO_DATA_IN` does show the
/// raw body bytes (chunk framing included, on 8.14.1 and 7.88.1), and this reads them.
///
/// Only framing that says where the body ends is watched: a `Content-Length`, or `chunked` as
/// the last transfer coding (its last chunk and trailer section). A body that ends with the
/// connection needs nothing: curl stops sending once a closing connection's response is read,
/// as it does on HTTP/2. Anything this cannot read makes it stop watching (``isLost``); curl
/// then decides, as it would without it. A value, fed on the network thread.
struct ResponseEndWatch: Equatable {
    private enum State: Equatable {
        /// Body bytes still to come of a declared length.
        case length(remaining: Int64)
        /// A chunk-size line: its size so far, whether a digit was seen, and whether an
        /// extension (`;…`) or whitespace began, after which digits no longer count.
        case chunkSize(size: Int64, digits: Bool, pastSize: Bool)
        /// Data bytes of the current chunk still to come.
        case chunkData(remaining: Int64)
        /// The CRLF after a chunk's data: `sawCR` when its CR came.
        case chunkDataEnd(sawCR: Bool)
        /// A trailer section line; `empty` while it has had no byte but a CR.
        case trailerLine(empty: Bool)
        /// The body is complete.
        case complete
        /// The bytes broke the framing: no longer watched.
        case lost
    }

    private var state: State

    /// A watch for a final response `head` to `method`, or nil when its end is not for this to
    /// see: not HTTP/1.x, not a success (curl stops sending by itself after a final status of
    /// 300 or more), or no framing that marks the end.
    init?(head: ResponseHead, method: String) {
        guard head.httpVersion.hasPrefix("HTTP/1."), (200..<300).contains(head.statusCode) else { return nil }
        if method == "HEAD" || head.statusCode == 204 || head.statusCode == 304 {
            state = .complete
            return
        }
        let codings = head.values(of: "Transfer-Encoding")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if let last = codings.last {
            guard last == "chunked" else { return nil }
            state = .chunkSize(size: 0, digits: false, pastSize: false)
            return
        }
        guard !head.hasConflictingContentLength, let declared = head.value(of: "Content-Length"),
              let length = HTTPDecimal.parse(declared) else { return nil }
        state = length == 0 ? .complete : .length(remaining: length)
    }

    /// The whole body came.
    var isComplete: Bool { state == .complete }

    /// The bytes did not follow the framing: nothing more is known.
    var isLost: Bool { state == .lost }

    /// Reads the next raw bytes of the body.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        while index < bytes.count {
            switch state {
            case .complete, .lost:
                // Bytes after the end: not this response's (curl fails such a connection).
                return
            case .length(let remaining):
                let taken = min(Int64(bytes.count - index), remaining)
                index += Int(taken)
                state = taken == remaining ? .complete : .length(remaining: remaining - taken)
            case .chunkData(let remaining):
                let taken = min(Int64(bytes.count - index), remaining)
                index += Int(taken)
                state = taken == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - taken)
            default:
                step(bytes[index])
                index += 1
            }
        }
    }

    /// One byte of a line: a chunk-size line, the CRLF after data, or a trailer line.
    private mutating func step(_ byte: UInt8) {
        let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
        switch state {
        case .chunkSize(let size, let digits, let pastSize):
            if byte == lf {
                guard digits else { return state = .lost }
                state = size == 0 ? .trailerLine(empty: true) : .chunkData(remaining: size)
            } else if !pastSize, let digit = Self.hexDigit(byte) {
                // 15 hex digits at most: a larger chunk cannot be real, and cannot overflow.
                guard size < (1 << 59) else { return state = .lost }
                state = .chunkSize(size: size << 4 | Int64(digit), digits: true, pastSize: false)
            } else if byte == UInt8(ascii: ";") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == cr {
                state = .chunkSize(size: size, digits: digits, pastSize: true)
            } else if !pastSize {
                state = .lost
            }
        case .chunkDataEnd(let sawCR):
            if byte == cr, !sawCR {
                state = .chunkDataEnd(sawCR: true)
            } else if byte == lf {
                state = .chunkSize(size: 0, digits: false, pastSize: false)
            } else {
                state = .lost
            }
        case .trailerLine(let empty):
            if byte == lf {
                state = empty ? .complete : .trailerLine(empty: true)
            } else if byte != cr {
                state = .trailerLine(empty: false)
            }
        default:
            break
        }
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
