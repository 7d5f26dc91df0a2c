import Foundation
import NIOCore
import NIOHTTP1

/// What `/events/<key>` sends: a Server-Sent Events feed of events 1…``count``, resumed after
/// the request's `Last-Event-ID`, that plays one ``Connection`` plan per request it receives
/// for its key (cut the body after some bytes, answer a status instead, or send it all), and
/// answers 204 once the client names the last event: the standard's "no more".
public struct EventFeed: Sendable, Equatable {
    /// What one request for the feed gets.
    public enum Connection: Sendable, Equatable {
        /// The body's first `bytes` bytes, then the connection closes mid-body.
        case cut(bytes: Int)
        /// This status (text/plain), then the connection stays open for the next request.
        case status(Int)
        /// The whole rest of the feed, ended cleanly (the client then reconnects).
        case whole
    }

    /// How many events the feed has (ids 1…count).
    public var count = 10
    /// Lines of `data` per event.
    public var dataLines = 1
    /// The line end: `"\n"`, `"\r\n"` or `"\r"`.
    public var lineEnd = "\n"
    /// A byte order mark at the start of every body.
    public var byteOrderMark = false
    /// A comment line before every event (as servers send to keep a connection alive).
    public var comments = false
    /// A `retry` field at the start of every body, in milliseconds.
    public var retry: Int? = 5
    /// The body is written in pieces of this many bytes, each flushed; 0: one write.
    public var writeSize = 0
    /// The `Content-Type` of a 200.
    public var contentType = "text/event-stream"
    /// The plan of request n (from 0) for the key; requests beyond the list get ``Connection/whole``.
    public var connections: [Connection] = []

    /// A feed with the defaults.
    public init() {}

    /// The `data` of event `id`: `dataLines` lines naming the id and the line (multi-byte
    /// text included, so that a cut can fall inside a character).
    public func data(of id: Int) -> String {
        (1...max(1, dataLines)).map { "event \(id) line \($0) ✓" }.joined(separator: "\n")
    }

    /// The body a request that names `lastID` (0: none) gets: what comes after it.
    public func body(after lastID: Int) -> [UInt8] {
        var text = byteOrderMark ? "\u{FEFF}" : ""
        if let retry { text += "retry: \(retry)" + lineEnd }
        for id in (lastID + 1)...max(lastID + 1, count) where id <= count {
            if comments { text += ": keep-alive" + lineEnd }
            text += "id: \(id)" + lineEnd
            for line in data(of: id).split(separator: "\n") { text += "data: \(line)" + lineEnd }
            text += lineEnd
        }
        return Array(text.utf8)
    }

    /// The id of the last event a client has dispatched once it read the first `bytes` bytes
    /// of ``body(after:)``: its text up to the first byte of its blank line's end (a CR ends a
    /// line; the LF of a CRLF may come later or never); `lastID` when none is.
    public func lastCompleteID(after lastID: Int, within bytes: Int) -> Int {
        var last = lastID
        var prefix = (byteOrderMark ? 3 : 0) + (retry.map { "retry: \($0)".utf8.count + lineEnd.utf8.count } ?? 0)
        for id in (lastID + 1)...max(lastID + 1, count) where id <= count {
            var event = comments ? ": keep-alive".utf8.count + lineEnd.utf8.count : 0
            event += "id: \(id)".utf8.count + lineEnd.utf8.count
            for line in data(of: id).split(separator: "\n") { event += "data: \(line)".utf8.count + lineEnd.utf8.count }
            event += lineEnd.utf8.count
            guard prefix + event - (lineEnd.utf8.count - 1) <= bytes else { break }
            prefix += event
            last = id
        }
        return last
    }

    var query: String {
        let plan = connections.map { connection -> String in
            switch connection {
            case .cut(let bytes): "c\(bytes)"
            case .status(let status): "s\(status)"
            case .whole: "w"
            }
        }.joined(separator: ",")
        let ends = ["\n": "lf", "\r\n": "crlf", "\r": "cr"][lineEnd] ?? "lf"
        return "count=\(count)&lines=\(dataLines)&end=\(ends)&bom=\(byteOrderMark ? 1 : 0)&comments=\(comments ? 1 : 0)"
            + "&retry=\(retry.map(String.init) ?? "")&write=\(writeSize)&plan=\(plan)"
            + "&type=\(contentType.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? contentType)"
    }

    init(query: [String: String]) {
        count = Int(query["count"] ?? "") ?? 10
        dataLines = Int(query["lines"] ?? "") ?? 1
        lineEnd = ["lf": "\n", "crlf": "\r\n", "cr": "\r"][query["end"] ?? "lf"] ?? "\n"
        byteOrderMark = query["bom"] == "1"
        comments = query["comments"] == "1"
        retry = Int(query["retry"] ?? "")
        writeSize = Int(query["write"] ?? "") ?? 0
        contentType = query["type"] ?? "text/event-stream"
        connections = (query["plan"] ?? "").split(separator: ",").compactMap { item -> Connection? in
            let value = Int(item.dropFirst())
            switch (item.first, value) {
            case ("c", let bytes?): return .cut(bytes: bytes)
            case ("s", let status?): return .status(status)
            case ("w", _): return .whole
            default: return nil
            }
        }
    }
}

extension RequestRouter {
    /// Answers request number `index` for a feed (see ``EventFeed``).
    func eventFeed(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, feed: EventFeed, index: Int) {
        let lastID = Int(head.headers.first(name: "Last-Event-ID") ?? "") ?? 0
        let plan = index < feed.connections.count ? feed.connections[index] : .whole
        if case .status(let status) = plan {
            return respond(context, head, status: status, body: Data("feed answers \(status)".utf8))
        }
        guard lastID < feed.count else { return respond(context, head, status: 204, body: Data()) }
        let headers = HTTPHeaders([("Content-Type", feed.contentType), ("Cache-Control", "no-cache"), ("Transfer-Encoding", "chunked")])
        writeHead(context, head, status: 200, headers: headers)
        var body = feed.body(after: lastID)
        if case .cut(let bytes) = plan { body = Array(body.prefix(bytes)) }
        let size = feed.writeSize > 0 ? feed.writeSize : max(1, body.count)
        for start in stride(from: 0, to: body.count, by: size) {
            let piece = body[start..<min(start + size, body.count)]
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: piece)))), promise: nil)
        }
        guard case .cut = plan else { return finish(context, head) }
        context.flush()
        context.close(promise: nil)
    }
}
