import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// What may continue the bytes held (RFC 9110 §13.1.5, §8.8.2.2): a strong ETag, or a
    /// `Last-Modified` a second or more before the `Date` of the answer it came with, when
    /// there is no ETag at all. A version named by nothing stronger is asked for whole again,
    /// never continued with a `Range` its server could answer with another version's bytes.
    @Suite struct IfRangeValidators {
        static let length = 160_000
        static let date = "Fri, 27 Nov 2026 06:00:00 GMT"
        static let secondBefore = "Fri, 27 Nov 2026 05:59:59 GMT"

        static func version(_ number: UInt8) -> [UInt8] {
            (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(number) &* 7) ^ number }
        }

        /// `body` as an honest server answers a request with `range` (`bytes=<from>-`): the
        /// rest as a 206, or the whole as a 200 without one; `fields` are CRLF-ended lines.
        static func answer(_ body: [UInt8], range: String?, fields: String) -> [FaultStep] {
            if let range, range.hasPrefix("bytes=") {
                let from = Int(range.dropFirst(6).prefix { $0.isNumber }) ?? 0
                let tail = "HTTP/1.1 206 Partial Content\r\n\(fields)Content-Range: bytes \(from)-\(body.count - 1)/\(body.count)\r\n"
                    + "Content-Length: \(body.count - from)\r\n\r\n"
                return [.send(Array(tail.utf8) + body[from...]), .closeWithFIN]
            }
            let whole = "HTTP/1.1 200 OK\r\n\(fields)Content-Length: \(body.count)\r\n\r\n"
            return [.send(Array(whole.utf8) + body), .closeWithFIN]
        }

        /// A server whose resource changes between the two requests, same length, same
        /// validators (`fields`): the first answer drops after 80,000 bytes of version 1; a
        /// later request with a `Range` gets version 2's tail as a 206, one without gets version
        /// 2 whole. Records each request's `Range` and `If-Range`.
        final class RewrittenResource: Sendable {
            let asked = LineLog()
            let server: FaultServer

            init(fields: String) throws {
                let asked = self.asked
                let served = Mutex(0)
                let head = "Content-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\n" + fields
                server = try FaultServer.startWithHeads({ request in
                    asked.append("range=\(request.field("Range") ?? "-") if-range=\(request.field("If-Range") ?? "-")")
                    let number = served.withLock { $0 += 1; return $0 }
                    if number == 1 {
                        let start = "HTTP/1.1 200 OK\r\n\(head)Content-Length: \(IfRangeValidators.length)\r\n\r\n"
                        return [.send(Array(start.utf8) + IfRangeValidators.version(1).prefix(80_000)), .closeWithFIN]
                    }
                    return IfRangeValidators.answer(IfRangeValidators.version(2), range: request.field("Range"), fields: head)
                })
            }

            var url: URL { URL(string: "http://127.0.0.1:\(server.port)/file")! }
        }

        /// The reports: a `Last-Modified` in the same second as the `Date` (no ETag), and a
        /// date beside a weak ETag, were sent in `If-Range`; a weak ETag was compared as if it
        /// named the bytes. Each spliced version 2's tail onto version 1's head, reported as a
        /// success. Now: version 2, whole, asked for without a `Range`.
        @Test(arguments: [
            "Last-Modified: \(IfRangeValidators.date)\r\nDate: \(IfRangeValidators.date)\r\n",
            "ETag: W/\"same\"\r\nLast-Modified: \(IfRangeValidators.secondBefore)\r\nDate: \(IfRangeValidators.date)\r\n",
            "ETag: W/\"same\"\r\n",
            "Last-Modified: \(IfRangeValidators.secondBefore)\r\n",
        ])
        func aVersionWithoutAStrongValidatorIsNeverContinued(fields: String) async throws {
            for toFile in [false, true] {
                let resource = try RewrittenResource(fields: fields)
                let file = temporaryFile()
                defer { removeDownload(file) }
                let op = HTTPRequestOperation(request: URLRequest(url: resource.url))
                if toFile { op.destinationURL = file }
                op.retryPolicy = RetryPolicy(maximumRetries: 2, initialDelay: 0.01)
                let outcome = try await run(op)
                #expect(outcome.error == nil, "\(String(describing: outcome.error))")
                let body = toFile ? try Data(contentsOf: file) : op.responseData ?? Data()
                #expect(body == Data(Self.version(2)), "held \(body.count) bytes, not version 2 whole")
                #expect(resource.asked.all == ["range=- if-range=-", "range=- if-range=-"])
                #expect(op.downloadMetrics.restartsFromZero == 1)
            }
        }

        /// Resume data for a version without a strong validator, handed to a new operation (a
        /// process restarted): the whole resource is asked for again, never a `Range` alone.
        @Test func resumeDataWithoutAStrongValidatorStartsOver() async throws {
            let resource = try RewrittenResource(fields: "ETag: W/\"same\"\r\n")
            let file = temporaryFile()
            defer { removeDownload(file) }
            try Data(Self.version(1).prefix(80_000)).write(to: file)
            var saved = ResumeData(url: resource.url, validator: nil, offset: 80_000, expectedLength: Int64(Self.length),
                                   destination: file)
            saved.entityTag = "W/\"same\""
            // The server's first answer is version 1's head: asked for, then version 2 whole.
            _ = try await run(HTTPRequestOperation(request: URLRequest(url: resource.url)))
            let op = HTTPRequestOperation(resumeData: saved)
            #expect(try await run(op).error == nil)
            #expect(try Data(contentsOf: file) == Data(Self.version(2)))
            #expect(resource.asked.all.last == "range=- if-range=-")
            #expect(op.downloadMetrics.restartsFromZero == 1)
        }

        /// Resume data whose validator is a weak tag (written by hand, or by another program):
        /// it is never sent as `If-Range` (RFC 9110 §13.1.5; a server comparing weakly would
        /// splice), so the download starts over. It was sent.
        @Test func resumeDataWithAWeakTagAsItsValidatorStartsOver() async throws {
            let resource = try RewrittenResource(fields: "ETag: W/\"same\"\r\n")
            let file = temporaryFile()
            defer { removeDownload(file) }
            try Data(Self.version(1).prefix(80_000)).write(to: file)
            let saved = ResumeData(url: resource.url, validator: .entityTag("W/\"same\""), offset: 80_000,
                                   expectedLength: Int64(Self.length), destination: file)
            _ = try await run(HTTPRequestOperation(request: URLRequest(url: resource.url)))
            let op = HTTPRequestOperation(resumeData: saved)
            #expect(try await run(op).error == nil)
            #expect(try Data(contentsOf: file) == Data(Self.version(2)))
            #expect(resource.asked.all.last == "range=- if-range=-", "\(resource.asked.all)")
        }

        /// From reading (issue 38): a 206 with `bytes N-M/*` (no complete length) whose body ends
        /// short of M, close-delimited, was reported complete. Confirmed: 600 of 1,000 bytes
        /// were a success. Now the rest is asked for, and the download completes.
        @Test func aPartialAnswerOfUnknownLengthCutShortIsNotComplete() async throws {
            let body = Self.version(3).prefix(1_000)
            let asked = LineLog()
            let server = try FaultServer.startWithHeads({ request in
                let range = request.field("Range") ?? "-"
                asked.append(range)
                let from = Int(range.dropFirst(6).prefix { $0.isNumber }) ?? 0
                // Each answer names the bytes to 999 and sends at most 500, then closes.
                let sent = body[(body.startIndex + from)...].prefix(500)
                let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(from)-999/*\r\nConnection: close\r\n\r\n"
                return [.send(Array(head.utf8) + sent), .closeWithFIN]
            })
            let file = temporaryFile()
            defer { removeDownload(file) }
            try Data(body.prefix(100)).write(to: file)
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/f")!))
            op.destinationURL = file
            op.resumesExistingFile = true
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(try Data(contentsOf: file) == Data(body))
            #expect(asked.all == ["bytes=100-", "bytes=600-"])
        }

        /// From reading (issue 38), confirmed: the 200 made up when a 416 says the bytes held are
        /// the whole resource had no `Content-Type`, so a JSON serializer refused a complete
        /// body. It now has the type of the answer that began the bytes.
        @Test func aDownloadFoundCompleteKeepsItsContentType() async throws {
            let json = Array(#"{"a":1}"#.utf8)
            let server = try FaultServer.startWithHeads({ request in
                guard request.field("Range") == nil else {
                    let done = "HTTP/1.1 416 Range Not Satisfiable\r\nETag: \"j\"\r\nContent-Range: bytes */\(json.count)\r\n"
                        + "Content-Length: 0\r\n\r\n"
                    return [.send(Array(done.utf8)), .closeWithFIN]
                }
                // Every byte of a chunked body, then a reset before its last chunk.
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: \"j\"\r\nTransfer-Encoding: chunked\r\n\r\n"
                return [.send(Array(head.utf8) + Array("\(String(json.count, radix: 16))\r\n".utf8) + json + Array("\r\n".utf8)),
                        .wait(.milliseconds(50)), .closeWithRST]
            })
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/j")!))
            op.responseSerializer = JSONResponseSerializer()
            op.retryPolicy = RetryPolicy(maximumRetries: 1, initialDelay: 0.01)
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(op.response?.statusCode == 200)
            #expect(op.response?.value(forHTTPHeaderField: "Content-Type") == "application/json")
        }

        /// From reading (issue 38), confirmed: after a resume in memory, `response` was the 206
        /// of the tail while `responseData` was the whole body. The response is now the answer
        /// that began the body, whose status and length describe it.
        @Test func aResumedBodyHasOneCoherentResponse() async throws {
            var options = ResumableOptions()
            options.dropAfter = 100_000
            let op = HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: 300_000, options: options))))
            op.retryPolicy = RetryPolicy(maximumRetries: 1, initialDelay: 0.01)
            #expect(try await run(op).error == nil)
            #expect(op.downloadMetrics.automaticResumes == 1)
            #expect(op.responseData?.count == 300_000)
            #expect(op.response?.statusCode == 200)
            #expect(op.response?.value(forHTTPHeaderField: "Content-Length") == "300000")
            #expect(op.response?.value(forHTTPHeaderField: "Content-Range") == nil)
        }

        /// A strong date (a second before the `Date`, no ETag) still continues: `If-Range`
        /// carries it, and the server that honours it answers with the rest of version 1.
        @Test func aStrongDateStillContinues() async throws {
            let asked = Mutex<[String]>([])
            let head = "Last-Modified: \(Self.secondBefore)\r\nDate: \(Self.date)\r\nAccept-Ranges: bytes\r\n"
            let body = Self.version(1)
            let server = try FaultServer.startWithHeads({ request in
                asked.withLock { $0.append(request.field("If-Range") ?? "-") }
                guard request.field("If-Range") == Self.secondBefore else {
                    let start = "HTTP/1.1 200 OK\r\n\(head)Content-Length: \(body.count)\r\n\r\n"
                    return [.send(Array(start.utf8) + body.prefix(80_000)), .closeWithFIN]
                }
                return Self.answer(body, range: request.field("Range"), fields: head)
            })
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/f")!))
            op.retryPolicy = RetryPolicy(maximumRetries: 1, initialDelay: 0.01)
            #expect(try await run(op).error == nil)
            #expect(op.responseData == Data(body))
            #expect(asked.withLock { $0 } == ["-", Self.secondBefore])
            #expect(op.downloadMetrics.restartsFromZero == 0)
        }

        /// A range answer naming another version (a server that ignores `If-Range`) is a
        /// restart, not a failure that the resume data kept would repeat: the report's
        /// `validatorChanged` on every later attempt.
        @Test func aChangedVersionRestartsFromZero() async throws {
            let served = Mutex(0)
            let server = try FaultServer.startWithHeads({ request in
                let number = served.withLock { $0 += 1; return $0 }
                let body = Self.version(number == 1 ? 1 : 2)
                let tag = number == 1 ? "\"v1\"" : "\"v2\""
                if number == 1 {
                    let start = "HTTP/1.1 200 OK\r\nETag: \(tag)\r\nContent-Length: \(body.count)\r\n\r\n"
                    return [.send(Array(start.utf8) + body.prefix(80_000)), .closeWithFIN]
                }
                return Self.answer(body, range: request.field("Range"), fields: "ETag: \(tag)\r\n")
            })
            let file = temporaryFile()
            defer { removeDownload(file) }
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/f")!))
            op.destinationURL = file
            op.retryPolicy = RetryPolicy(maximumRetries: 1, initialDelay: 0.01)
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(try Data(contentsOf: file) == Data(Self.version(2)))
            #expect(served.withLock { $0 } == 3, "whole, range (refused), whole")
            #expect(op.downloadMetrics.restartsFromZero == 1)
        }
    }
}
