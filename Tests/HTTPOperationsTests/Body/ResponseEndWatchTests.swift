import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// ``ResponseEndWatch``: where an HTTP/1.x body ends, read from its raw bytes (issue 38,
    /// item 18). Its promise: complete exactly at the body's last byte, never before, however
    /// the bytes are split; anything it cannot read is `lost`, never `complete`.
    @Suite struct ResponseEndWatching {
        static func head(_ fields: [(String, String)], status: Int = 200, version: String = "HTTP/1.1") -> ResponseHead {
            ResponseHead(statusCode: status, httpVersion: version, fields: fields.map { (name: $0.0, value: $0.1) })
        }

        static let chunked = head([("Transfer-Encoding", "chunked")])

        /// Feeds `body` in the pieces `cuts` makes; returns the index of the byte after which
        /// the watch said complete (nil if it never did), and whether it was lost.
        static func watch(_ head: ResponseHead, _ body: [UInt8], cuts: [Int]) -> (completeAfter: Int?, lost: Bool) {
            guard var watch = ResponseEndWatch(head: head, method: "POST") else { return (nil, false) }
            var completeAfter: Int?
            var start = 0
            for end in (cuts.filter { $0 > 0 && $0 < body.count }.sorted() + [body.count]) where end > start {
                // Each piece fed whole (as curl hands them); the byte that completed it is found
                // by replaying the piece byte by byte.
                let wasComplete = watch.isComplete
                body[start..<end].withUnsafeBytes { watch.consume($0) }
                if !wasComplete, watch.isComplete, completeAfter == nil {
                    var replay = ResponseEndWatch(head: head, method: "POST")!
                    body[..<start].withUnsafeBytes { replay.consume($0) }
                    for index in start..<end {
                        [body[index]].withUnsafeBytes { replay.consume($0) }
                        if replay.isComplete { completeAfter = index; break }
                    }
                }
                start = end
            }
            return (completeAfter, watch.isLost)
        }

        @Test func headsWhoseEndIsWatched() {
            #expect(ResponseEndWatch(head: Self.chunked, method: "POST") != nil)
            #expect(ResponseEndWatch(head: Self.head([("Content-Length", "10")]), method: "POST") != nil)
            #expect(ResponseEndWatch(head: Self.head([("Transfer-Encoding", "gzip, chunked")]), method: "POST") != nil)
            // Not HTTP/1.x, not a success, or ending with the connection: curl decides.
            #expect(ResponseEndWatch(head: Self.head([("Content-Length", "10")], version: "HTTP/2"), method: "POST") == nil)
            #expect(ResponseEndWatch(head: Self.head([("Content-Length", "10")], status: 404), method: "POST") == nil)
            #expect(ResponseEndWatch(head: Self.head([]), method: "POST") == nil)
            #expect(ResponseEndWatch(head: Self.head([("Transfer-Encoding", "chunked, gzip")]), method: "POST") == nil)
            #expect(ResponseEndWatch(head: Self.head([("Content-Length", "+10")]), method: "POST") == nil)
            #expect(ResponseEndWatch(head: Self.head([("Content-Length", "10"), ("Content-Length", "11")]), method: "POST") == nil)
            // No body at all: complete with the head.
            #expect(ResponseEndWatch(head: Self.head([], status: 204), method: "POST")?.isComplete == true)
            #expect(ResponseEndWatch(head: Self.head([("Content-Length", "0")]), method: "POST")?.isComplete == true)
            #expect(ResponseEndWatch(head: Self.head([("Content-Length", "5")]), method: "HEAD")?.isComplete == true)
        }

        @Test func aChunkedBodyWithExtensionsAndTrailers() {
            let body = Array("5;name=value\r\nhello\r\n1A \r\n\(String(repeating: "x", count: 26))\r\n0\r\nX-Sum: 1\r\nX-More: 2\r\n\r\n".utf8)
            for cut in 0...body.count {
                let seen = Self.watch(Self.chunked, body, cuts: [cut])
                #expect(seen.completeAfter == body.count - 1, "cut at \(cut)")
            }
        }

        @Test func bareLineFeedsAndNoTrailers() {
            let body = Array("3\nabc\n0\n\n".utf8)
            #expect(Self.watch(Self.chunked, body, cuts: []).completeAfter == body.count - 1)
        }

        @Test(arguments: ["zz\r\n", "\r\n", "3\r\nabcX", "ffffffffffffffffff\r\n", "-1\r\n"])
        func malformedFramingIsLostNeverComplete(_ text: String) {
            let seen = Self.watch(Self.chunked, Array(text.utf8) + Array("0\r\n\r\n".utf8), cuts: [])
            #expect(seen.completeAfter == nil)
            #expect(seen.lost)
        }

        /// The property, seeded: random chunked bodies (chunk sizes, extensions, trailer fields,
        /// CRLF or LF) and declared lengths, cut at random places. Complete exactly at the last
        /// byte, every time.
        @Test func completeExactlyAtTheLastByte() {
            let seed = UInt64.random(in: 1...UInt64.max)
            print("ResponseEndWatching.completeExactlyAtTheLastByte: seed \(seed)")
            var random = SeededGenerator(seed: seed)
            var violations = 0
            for scenario in 0..<2000 {
                let newline = Bool.random(using: &random) ? "\r\n" : "\n"
                var text = ""
                var head = Self.chunked
                if Bool.random(using: &random) {
                    let length = Int.random(in: 1...5000, using: &random)
                    text = String(repeating: "0", count: length)
                    head = Self.head([("Content-Length", "\(length)")])
                } else {
                    for _ in 0..<Int.random(in: 0...6, using: &random) {
                        let size = Int.random(in: 1...3000, using: &random)
                        let digits = String(size, radix: 16, uppercase: Bool.random(using: &random))
                        let ext = Bool.random(using: &random) ? ";x=\"0\"" : ""
                        // Data that looks like framing: zeros and newlines.
                        text += digits + ext + newline + String(repeating: Bool.random(using: &random) ? "0" : "\n", count: size) + newline
                    }
                    text += "0" + newline
                    for index in 0..<Int.random(in: 0...2, using: &random) { text += "X-T\(index): v" + newline }
                    text += newline
                }
                let body = Array(text.utf8)
                let cuts = (0..<Int.random(in: 0...4, using: &random)).map { _ in Int.random(in: 0...body.count, using: &random) }
                let seen = Self.watch(head, body, cuts: cuts)
                if seen.completeAfter != body.count - 1 || seen.lost {
                    violations += 1
                    if violations < 4 { Issue.record("scenario \(scenario) (seed \(seed)): complete after \(String(describing: seen.completeAfter)) of \(body.count), lost \(seen.lost)") }
                }
            }
            #expect(violations == 0, "seed \(seed)")
        }
    }
}
