import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The status line and header fields of one HTTP response, as they came off the wire.
///
/// The fields are kept as bytes — every trimmed name and value back to back in one buffer —
/// and become `String`s only when asked for. Heads are built on the network thread for every
/// response, and most of their values (`Date`, `Server`, …) are never read; a `String` per
/// name and value was up to eight allocations per small response.
struct ResponseHead: Sendable, Equatable {
    /// The status code, such as 200.
    var statusCode: Int
    /// The protocol from the status line, such as `HTTP/1.1` or `HTTP/2`.
    var httpVersion: String
    /// Every field's name and value bytes, in the order received.
    private var storage: [UInt8] = []
    /// Where each field's name and value lie in `storage`, in the order received.
    private var spans: [FieldSpan] = []

    private struct FieldSpan: Sendable, Equatable {
        var name: Range<Int>
        var value: Range<Int>
    }

    /// A head with no fields yet.
    init(statusCode: Int, httpVersion: String) {
        self.statusCode = statusCode
        self.httpVersion = httpVersion
    }

    /// A head with `fields`, in this order.
    init(statusCode: Int, httpVersion: String, fields: [(name: String, value: String)]) {
        self.init(statusCode: statusCode, httpVersion: httpVersion)
        for (name, value) in fields {
            var name = name, value = value
            name.withUTF8 { name in value.withUTF8 { append(name: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer($0)) } }
        }
    }

    /// Header fields in the order received; names keep the server's spelling.
    var fields: [(name: String, value: String)] {
        spans.map { (string(storage[$0.name]), string(storage[$0.value])) }
    }

    /// Calls `body` with each field's name and value bytes, in the order received: for
    /// conversions that need no `String` of the value (the HTTPTypes door's fields).
    func forEachField(_ body: (_ name: ArraySlice<UInt8>, _ value: ArraySlice<UInt8>) -> Void) {
        for span in spans { body(storage[span.name], storage[span.value]) }
    }

    /// How many fields the head has.
    var fieldCount: Int { spans.count }

    /// The first value of the field `name`, compared case-insensitively (ASCII, as field
    /// names are).
    func value(of name: String) -> String? {
        spans.first { isNamed(name, $0) }.map { string(storage[$0.value]) }
    }

    /// Every value of the field `name`, in the order received.
    func values(of name: String) -> [String] {
        spans.filter { isNamed(name, $0) }.map { string(storage[$0.value]) }
    }

    /// The bytes of the only value of the field `name`: `.none` when the field is absent,
    /// `.many` when it is repeated. For readers on hot paths that need no `String`.
    func onlyValueBytes(of name: String) -> OnlyValue {
        var found: ArraySlice<UInt8>?
        for span in spans where isNamed(name, span) {
            guard found == nil else { return .many }
            found = storage[span.value]
        }
        return found.map(OnlyValue.one) ?? .none
    }

    /// What ``onlyValueBytes(of:)`` found.
    enum OnlyValue {
        case none
        case one(ArraySlice<UInt8>)
        case many
    }

    /// Whether the response names more than one body length: `Content-Length` values that
    /// differ, in one field (`4, 10`) or in several (a list with a value that is not a number
    /// counts), while no `Transfer-Encoding` overrides them. RFC 9112 §6.3 makes that an
    /// unrecoverable error (curl 7.88 reads the first number). The same value repeated is one
    /// length. A single value without a comma is curl's to judge, and is read from the bytes
    /// without a `String`.
    var hasConflictingContentLength: Bool {
        switch onlyValueBytes(of: "Content-Length") {
        case .none:
            return false
        case .one(let bytes) where !bytes.contains(UInt8(ascii: ",")):
            return false
        case .one, .many:
            guard value(of: "Transfer-Encoding") == nil else { return false }
            let lengths = values(of: "Content-Length")
                .flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { HTTPDecimal.parse($0.trimmingCharacters(in: .whitespaces)) }
            guard let first = lengths.first, let length = first else { return true }
            return lengths.contains { $0 != length }
        }
    }

    /// The body length the `Content-Length` announces, when the body is not content-encoded
    /// (an encoded body's length counts other bytes than the decoded ones we store). Read from
    /// the bytes: this runs on the network thread for every response.
    var decodedContentLength: Int64? {
        if let encoding = spans.first(where: { isNamed("Content-Encoding", $0) }),
           !bytes(encoding.value, match: "identity") {
            return nil
        }
        guard let length = spans.first(where: { isNamed("Content-Length", $0) }) else { return nil }
        return HTTPDecimal.parse(bytes: storage[length.value])
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

    // MARK: - Building

    /// Adds a field at the end.
    mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if storage.isEmpty {
            // One allocation for a typical head rather than a doubling per few fields.
            storage.reserveCapacity(512)
            spans.reserveCapacity(16)
        }
        let nameStart = storage.count
        storage.append(contentsOf: name)
        let valueStart = storage.count
        storage.append(contentsOf: value)
        spans.append(FieldSpan(name: nameStart..<valueStart, value: valueStart..<storage.count))
    }

    /// Continues the last field's value with a space and `continuation` (obsolete line
    /// folding); does nothing when there is no field yet.
    mutating func continueLastValue(with continuation: UnsafeRawBufferPointer) {
        guard let last = spans.indices.last else { return }
        // The last field's value is the end of the storage.
        storage.append(UInt8(ascii: " "))
        storage.append(contentsOf: continuation)
        spans[last].value = spans[last].value.lowerBound..<storage.count
    }

    // MARK: - Reading

    private func isNamed(_ name: String, _ span: FieldSpan) -> Bool {
        bytes(span.name, match: name)
    }

    /// Whether `storage[range]` spells `text`, ignoring ASCII case.
    private func bytes(_ range: Range<Int>, match text: String) -> Bool {
        storage.withUnsafeBufferPointer { storage in
            fieldNamesMatch(UnsafeBufferPointer(rebasing: storage[range]), text)
        }
    }

    private func string(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

/// Turns the header lines curl hands us, one callback per line, into ``ResponseHead`` values.
///
/// One transfer can see several heads: interim 1xx responses, and the 401 that curl answers
/// itself when it negotiates Digest authentication. Each blank line completes one.
///
/// Field lines after a final head's blank line, before any new status line, are its
/// trailers (curl passes a chunked body's trailer section, and HTTP/2's trailing HEADERS,
/// through the same callback); ``takeTrailers()`` hands them over.
struct ResponseHeadParser {
    /// The head being read, from a status line with a valid code on; meaningful only while
    /// `readingHead`. Not an optional: every line would copy it out of one to test and change
    /// it, where a plain stored head is appended to in place.
    private var head = ResponseHead(statusCode: 0, httpVersion: "")
    /// A status line with a valid code started `head`, and no blank line has ended it yet;
    /// false before one, or after a status line whose code did not parse (its fields are then
    /// skipped).
    private var readingHead = false
    /// A final head completed: field lines from now on are its trailers.
    private var afterFinalHead = false
    /// The trailer fields read so far (a head with the final status, holding only them).
    private var trailers: ResponseHead?
    /// The final head's status, for the trailers' holder.
    private var finalStatus = 0

    /// Feeds one line, including its CRLF. Returns the head when the line completes one.
    ///
    /// Works on the bytes, with indices rather than generic slices: this runs for every
    /// header line on the network thread.
    mutating func consume(line bytes: UnsafeRawBufferPointer) -> ResponseHead? {
        let line = Self.trimmed(bytes, from: 0, to: bytes.count)
        if line.isEmpty {
            guard readingHead else { return nil }
            readingHead = false
            var completed = ResponseHead(statusCode: 0, httpVersion: "")
            swap(&completed, &head)
            afterFinalHead = !completed.isInterim
            finalStatus = completed.statusCode
            return completed
        }
        if Self.startsWithHTTPSlash(bytes, line) {
            // A new status line starts a new head, whatever came before.
            let (version, code) = Self.statusLine(bytes, line)
            if let code {
                head = ResponseHead(statusCode: code, httpVersion: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[version]), as: UTF8.self))
                readingHead = true
            } else {
                readingHead = false
            }
            (afterFinalHead, trailers) = (false, nil)
        } else if readingHead || afterFinalHead, let colon = Self.firstColon(bytes, line) {
            let nameRange = Self.trimmed(bytes, from: line.lowerBound, to: colon)
            let valueRange = Self.trimmed(bytes, from: colon + 1, to: line.upperBound)
            let name = UnsafeRawBufferPointer(rebasing: bytes[nameRange])
            let value = UnsafeRawBufferPointer(rebasing: bytes[valueRange])
            if readingHead {
                head.append(name: name, value: value)
            } else {
                if trailers == nil { trailers = ResponseHead(statusCode: finalStatus, httpVersion: "") }
                trailers!.append(name: name, value: value)
            }
        } else if bytes.first == UInt8(ascii: " ") || bytes.first == UInt8(ascii: "\t") {
            // Obsolete line folding (RFC 9112 §5.2): a continuation of the previous value.
            let continuation = UnsafeRawBufferPointer(rebasing: bytes[line])
            if readingHead {
                head.continueLastValue(with: continuation)
            } else {
                trailers?.continueLastValue(with: continuation)
            }
        }
        return nil
    }

    /// The trailer fields read after the last final head, if any: each is handed over once.
    mutating func takeTrailers() -> ResponseHead? {
        defer { trailers = nil }
        return trailers
    }

    /// Whether `bytes[line]` starts with `HTTP/`, as a status line does.
    private static func startsWithHTTPSlash(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) -> Bool {
        line.count >= 5 && bytes[line.lowerBound] == UInt8(ascii: "H") && bytes[line.lowerBound + 1] == UInt8(ascii: "T")
            && bytes[line.lowerBound + 2] == UInt8(ascii: "T") && bytes[line.lowerBound + 3] == UInt8(ascii: "P")
            && bytes[line.lowerBound + 4] == UInt8(ascii: "/")
    }

    /// The index of the first `:` in `bytes[line]`, if any.
    private static func firstColon(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) -> Int? {
        guard let base = bytes.baseAddress, !line.isEmpty,
              let found = memchr(base + line.lowerBound, Int32(UInt8(ascii: ":")), line.count) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// Where the protocol lies in the status line `bytes[line]`, and its status code (nil
    /// when it is not a number).
    private static func statusLine(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) -> (version: Range<Int>, code: Int?) {
        let space = UInt8(ascii: " ")
        var versionEnd = line.lowerBound
        while versionEnd < line.upperBound, bytes[versionEnd] != space { versionEnd += 1 }
        let version = line.lowerBound..<versionEnd
        var index = versionEnd
        while index < line.upperBound, bytes[index] == space { index += 1 }
        var code = 0
        var digits = 0
        while index < line.upperBound, bytes[index] != space {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10, digits < 9 else { return (version, nil) }
            code = code * 10 + Int(digit)
            digits += 1
            index += 1
        }
        return (version, digits > 0 ? code : nil)
    }

    /// `start..<end` without leading and trailing spaces, tabs, CR and LF in `bytes`.
    private static func trimmed(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Range<Int> {
        func isSpace(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
        }
        var lower = start
        var upper = end
        while lower < upper, isSpace(bytes[lower]) { lower += 1 }
        while upper > lower, isSpace(bytes[upper - 1]) { upper -= 1 }
        return lower..<upper
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
    // and the rest are compared without the generic iterator, which costs on every field of
    // every response (Docs/Performance.md, "Fixed so far").
    guard lhs.utf8.count == rhs.utf8.count else { return false }
    let compared = lhs.utf8.withContiguousStorageIfAvailable { fieldNamesMatch($0, rhs) }
    return compared ?? lhs.utf8.elementsEqual(rhs.utf8) { asciiLowercased($0) == asciiLowercased($1) }
}

/// Whether the field name in `bytes` is `name`, compared as the two-`String` form compares.
func fieldNamesMatch(_ bytes: UnsafeBufferPointer<UInt8>, _ name: String) -> Bool {
    guard bytes.count == name.utf8.count else { return false }
    let compared = name.utf8.withContiguousStorageIfAvailable { name in
        zip(bytes, name).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
    }
    return compared ?? bytes.elementsEqual(name.utf8) { asciiLowercased($0) == asciiLowercased($1) }
}
