import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Counts requests per resumable resource across connections, for the faults that depend on
/// how many came before (a new version per request, drops on the first responses only).
final class ResourceCounters: Sendable {
    /// The resumable-upload routes' uploads (``UploadStore``).
    let uploads = UploadStore()
    private let counts = Mutex<[String: Int]>([:])

    /// Counts one more request for `key`; returns how many came before it.
    func next(_ key: String) -> Int {
        counts.withLock { counts in
            defer { counts[key, default: 0] += 1 }
            return counts[key, default: 0]
        }
    }

    /// How many requests `key` has seen.
    func count(_ key: String) -> Int {
        counts.withLock { $0[key, default: 0] }
    }

    /// `/delay` requests waiting for their answer now, and the most that ever waited at once.
    private let delayed = Mutex((now: 0, most: 0))

    /// A `/delay` request began its wait.
    func delayBegan() {
        delayed.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
    }

    /// A `/delay` request was answered.
    func delayEnded() {
        delayed.withLock { $0.now -= 1 }
    }

    /// The most `/delay` requests that waited at once.
    var mostDelayedAtOnce: Int { delayed.withLock { $0.most } }

    /// Counts the most from the requests waiting now.
    func resetMostDelayed() {
        delayed.withLock { $0.most = $0.now }
    }
}

extension RequestRouter {
    /// Answers `/resumable/<size>?...` (see ``ResumableOptions``).
    func resumable(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, size: Int, query: [String: String]) {
        let key = query["key"] ?? "default"
        if let credentials = query["auth"],
           head.headers.first(name: "Authorization") != "Basic " + Data(credentials.utf8).base64EncodedString() {
            // Challenged requests are counted apart: they are not requests for the bytes.
            _ = counters.next(key + "#challenged")
            return respond(context, head, status: 401, body: Data("credentials required".utf8),
                           extra: [("WWW-Authenticate", #"Basic realm="files""#)])
        }
        let previous = counters.next(key)
        let version = query["change"] == "1" ? previous : 0
        let etag: String? = switch query["etag"] {
        case "weak": #"W/"v\#(version)-\#(size)""#
        case "none": nil
        default: #""v\#(version)-\#(size)""#
        }
        let lastModified = query["lm"] == "1" ? "Sat, 21 Nov 2026 10:00:\(String(format: "%02d", version % 60)) GMT" : nil

        // A `Date`, as every origin server with a clock sends (RFC 9110 §6.6.1): what makes its
        // `Last-Modified` a strong validator.
        var headers = HTTPHeaders([("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes"),
                                   ("Date", Self.httpDate(Date()))])
        if let etag { headers.add(name: "ETag", value: etag) }
        if let lastModified { headers.add(name: "Last-Modified", value: lastModified) }

        var start = 0
        var end = size
        var status = 200
        if let rangeStatus = query["rangeStatus"].flatMap(Int.init), head.headers.first(name: "Range") != nil {
            return respond(context, head, status: rangeStatus, body: Data("no ranges today (\(rangeStatus))".utf8))
        }
        if query["ignoreRange"] != "1", let range = head.headers.first(name: "Range"), let from = Self.rangeStart(range) {
            // If-Range: the range holds only for the version the client names (RFC 9110 §13.1.5).
            let ifRange = head.headers.first(name: "If-Range")
            let validatorMatches = ifRange == nil || ifRange == etag || (ifRange == lastModified && lastModified != nil)
                || query["ignoreIfRange"] == "1"
            if validatorMatches {
                if from >= size {
                    headers.add(name: "Content-Range", value: "bytes */\(size)")
                    headers.add(name: "Content-Length", value: "0")
                    writeHead(context, head, status: 416, headers: headers)
                    return finish(context, head)
                }
                start = from
                status = 206
                // A closed range (bytes=a-b) ends at b; a cap ends it sooner.
                if let last = Self.rangeEnd(range) { end = min(end, last + 1) }
                if let cap = query["cap"].flatMap(Int.init) { end = min(end, from + cap) }
                let claimed = query["badStart"] == "1" ? from + 100 : from
                if query["noContentRange"] != "1" {
                    headers.add(name: "Content-Range", value: "bytes \(claimed)-\(end - 1)/\(size)")
                }
            }
        }
        headers.add(name: "Content-Length", value: "\(end - start)")
        writeHead(context, head, status: status, headers: headers)
        guard head.method != .HEAD else { return finish(context, head) }

        let drops = Int(query["drops"] ?? "1") ?? 1
        let dropAfter = query["dropAfter"].flatMap(Int.init).flatMap { previous < drops ? $0 : nil }
        streamer = PatternStreamer(
            request: head, offset: start, remaining: min(end - start, dropAfter ?? .max),
            contentShift: version * 7, closeAfter: dropAfter.map { _ in query["rst"] == "1" ? .reset : .close } ?? .none,
            chunkSize: query["chunk"].flatMap(Int.init), delay: .milliseconds(Int64(query["delay"] ?? "0") ?? 0))
        pumpStreamer(context: context)
    }

    /// The last byte of `bytes=<first>-<last>`; nil for `bytes=<first>-`.
    static func rangeEnd(_ value: String) -> Int? {
        guard value.hasPrefix("bytes="), let dash = value.firstIndex(of: "-") else { return nil }
        return Int(value[value.index(after: dash)...])
    }

    /// The first byte of `bytes=<first>-` or `bytes=<first>-<last>`.
    static func rangeStart(_ value: String) -> Int? {
        guard value.hasPrefix("bytes="), let dash = value.firstIndex(of: "-") else { return nil }
        return Int(value[value.index(value.startIndex, offsetBy: 6)..<dash])
    }
}
