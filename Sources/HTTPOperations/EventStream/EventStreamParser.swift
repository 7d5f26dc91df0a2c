/// Turns the bytes of `text/event-stream` bodies into events, as the WHATWG HTML standard's
/// "Interpreting an event stream" says: lines end with CRLF, LF or CR (also when a CRLF is
/// split between two chunks); one leading byte order mark is dropped; a line starting with
/// `:` is a comment; `event`, `data`, `id` and `retry` are the fields, and other names are
/// ignored; one space after the colon is dropped; an `id` holding NUL is ignored; a `retry`
/// of anything but ASCII digits is ignored; a blank line dispatches the event, and an event
/// with no `data` line only moves the last event id; what is left when a stream ends is
/// discarded, never dispatched.
///
/// One parser serves every connection of one event stream: ``beginStream(after:)`` starts the next
/// body. The last event id survives it (the standard keeps it on the event source), and a new
/// body's events without `id` go on carrying it, as browsers do: an `id` read in an event
/// that the connection's end cut off is forgotten, so a reconnection never names an event
/// that was not received whole.
///
/// Lines are split on bytes and each value decoded as UTF-8 with replacement characters: CR,
/// LF and `:` are ASCII and never part of a longer UTF-8 sequence, so this equals decoding
/// the whole stream first.
struct EventStreamParser: Sendable {
    /// The most bytes one event may hold, its data and its longest line together; more is
    /// ``EventStreamError/Reason/eventTooLarge(limit:)``. Bounds the memory a server can make
    /// the client hold.
    let maximumEventBytes: Int

    /// The id the last dispatched event carried: what a reconnection sends.
    private(set) var lastEventID: String
    /// The last valid `retry` field's value, in milliseconds, when any was read.
    private(set) var reconnectionTime: Int?
    /// Set when an event grew past ``maximumEventBytes``; the parser then reads nothing more.
    private(set) var failure: EventStreamError?

    private var lastEventIDBuffer: String
    private var eventType: [UInt8] = []
    /// The event's `data` lines, each followed by a line feed.
    private var data: [UInt8] = []
    /// The line read so far (no terminator yet).
    private var line: [UInt8] = []
    /// The body's first bytes have not all been seen yet: they may be a byte order mark.
    private var atBodyStart = true
    /// The last line ended with CR: a LF right after it (even in the next chunk) ends nothing.
    private var lastLineEndedWithCR = false

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
    private static let lineFeed: UInt8 = 0x0A
    private static let carriageReturn: UInt8 = 0x0D
    private static let colon: UInt8 = 0x3A
    private static let space: UInt8 = 0x20

    /// A parser whose stream resumes after `lastEventID` (empty: from the start).
    init(lastEventID: String = "", maximumEventBytes: Int = 1 << 20) {
        self.lastEventID = lastEventID
        self.lastEventIDBuffer = lastEventID
        self.maximumEventBytes = maximumEventBytes
    }

    /// Starts the next connection's body: what the last one left unfinished is discarded.
    ///
    /// - Parameter lastEventID: The id the connection's request named (the last event
    ///   delivered), when it is not the last one parsed: events read ahead and held back by a
    ///   pause come again on the new connection, and an event without an id is theirs.
    mutating func beginStream(after lastEventID: String? = nil) {
        eventType = []
        data = []
        line = []
        atBodyStart = true
        lastLineEndedWithCR = false
        if let lastEventID { self.lastEventID = lastEventID }
        lastEventIDBuffer = self.lastEventID
    }

    /// The events that `bytes`, the body's next bytes, complete, in order. When an event grows
    /// past ``maximumEventBytes`` the events completed before it are still returned, and
    /// ``failure`` is set: nothing after it is read.
    mutating func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        guard failure == nil else { return events }
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if lastLineEndedWithCR {
                lastLineEndedWithCR = false
                if bytes[index] == Self.lineFeed {
                    index = bytes.index(after: index)
                    continue
                }
            }
            let end = bytes[index...].firstIndex { $0 == Self.lineFeed || $0 == Self.carriageReturn }
            line.append(contentsOf: bytes[index..<(end ?? bytes.endIndex)])
            if atBodyStart { dropByteOrderMark(lineEnds: end != nil) }
            guard line.count + data.count <= maximumEventBytes else {
                failure = EventStreamError(reason: .eventTooLarge(limit: maximumEventBytes))
                line = []
                data = []
                break
            }
            guard let end else { break }
            lastLineEndedWithCR = bytes[end] == Self.carriageReturn
            index = bytes.index(after: end)
            if let event = take(line) { events.append(event) }
            line.removeAll(keepingCapacity: true)
        }
        return events
    }

    /// Drops a leading byte order mark once the line holds enough bytes to tell.
    private mutating func dropByteOrderMark(lineEnds: Bool) {
        let mark = Self.byteOrderMark
        if line.count >= mark.count {
            if line.starts(with: mark) { line.removeFirst(mark.count) }
            atBodyStart = false
        } else if lineEnds || !mark.starts(with: line) {
            atBodyStart = false
        }
    }

    /// Takes one complete line; returns the event a blank line dispatches.
    private mutating func take(_ line: [UInt8]) -> ServerSentEvent? {
        if line.isEmpty { return dispatch() }
        if line.first == Self.colon { return nil }
        let name: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: Self.colon) {
            name = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == Self.space { value = value.dropFirst() }
        } else {
            name = line[...]
            value = []
        }
        switch String(decoding: name, as: UTF8.self) {
        case "event":
            eventType = Array(value)
        case "data":
            data.append(contentsOf: value)
            data.append(Self.lineFeed)
        case "id" where !value.contains(0):
            lastEventIDBuffer = String(decoding: value, as: UTF8.self)
        case "retry" where !value.isEmpty && value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }):
            reconnectionTime = Self.milliseconds(value)
        default:
            break
        }
        return nil
    }

    /// The standard's "dispatch the event".
    private mutating func dispatch() -> ServerSentEvent? {
        lastEventID = lastEventIDBuffer
        defer {
            data.removeAll(keepingCapacity: true)
            eventType.removeAll(keepingCapacity: true)
        }
        guard !data.isEmpty else { return nil }
        data.removeLast()
        let type = eventType.isEmpty ? "message" : String(decoding: eventType, as: UTF8.self)
        return ServerSentEvent(event: type, data: String(decoding: data, as: UTF8.self), lastEventID: lastEventID)
    }

    /// ASCII digits as a number of milliseconds, saturating rather than overflowing.
    private static func milliseconds(_ digits: ArraySlice<UInt8>) -> Int {
        var value = 0
        for digit in digits {
            let (times10, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = times10.addingReportingOverflow(Int(digit - 0x30))
            if overflowA || overflowB { return Int.max }
            value = sum
        }
        return value
    }
}
