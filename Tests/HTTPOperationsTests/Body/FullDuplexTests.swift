import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Synchronization
import Testing

extension AllTests {
    /// Full-duplex request bodies (issue 26, item 3): a ``StreamedRequestBody`` written while
    /// the response streams back, through both doors, over HTTP/1.1 (the test server, and
    /// nginx in front of it) and HTTP/2 (nginx), with backpressure both ways, restarts on
    /// 307, declared lengths held to, and a seeded campaign whose oracle is "the echo is
    /// exactly what was written, or the request failed with a typed error".
    @Suite struct FullDuplex {
        /// The CPU time the process has used, in seconds.
        static func processCPUTime() throws -> Double {
            var time = timespec()
            guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time) == 0 else { throw POSIXError(.EINVAL) }
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }

        /// Answers the head and then never reads again: the upload fills the socket buffers.
        static let deafServer = faultServer { _ in
            [.send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)), .stopReading]
        }

        /// Where `/duplex/echo` is reached.
        enum Route: CaseIterable, CustomStringConvertible {
            /// The test server, HTTP/1.1.
            case direct
            /// nginx in front of it, plain HTTP/1.1.
            case nginx
            /// nginx in front of it, HTTP/2 over TLS.
            case nginxHTTP2

            var description: String {
                switch self {
                case .direct: "test server (HTTP/1.1)"
                case .nginx: "nginx (HTTP/1.1)"
                case .nginxHTTP2: "nginx (HTTP/2)"
                }
            }

            func url(_ path: String) -> URL {
                switch self {
                // Resolved, not appended: a query stays a query.
                case .direct: URL(string: path, relativeTo: testServer.baseURL)!.absoluteURL
                case .nginx: URL(string: ExternalServers.nginx.baseURL + path)!
                case .nginxHTTP2: URL(string: ExternalServers.nginx.tlsBaseURL + path)!
                }
            }

            func manager() throws -> HTTPRequestOperationManager {
                let manager = HTTPRequestOperationManager()
                if self == .nginxHTTP2 { manager.securityPolicy = try ExternalServers.nginx.policyTrustingItsAuthority() }
                return manager
            }
        }

        /// Round trips on one request over each route: each write is echoed before the next
        /// is written, so nothing can be gathered up to the end.
        @Test(arguments: Route.allCases)
        func roundTripsOverEachRoute(_ route: Route) async throws {
            let manager = try route.manager()
            let (echoes, echoed) = AsyncStream.makeStream(of: Void.self)
            let body = HTTPRequestBody.restartable { writer in
                var heard = echoes.makeAsyncIterator()
                for round in 0..<200 {
                    try await writer.write(Data("round \(round);".utf8))
                    guard await heard.next() != nil else { break }
                }
                return nil
            }
            let (version, text) = try await manager.perform(HTTPRequest(method: .post, url: route.url("/duplex/echo")), body: body) { _, stream in
                var text = "", pending = ""
                for try await chunk in stream {
                    pending += String(decoding: chunk, as: UTF8.self)
                    // nginx may split an echo in two: a round is heard when its `;` came.
                    while let end = pending.firstIndex(of: ";") {
                        text += pending[...end]
                        pending.removeSubrange(...end)
                        echoed.yield()
                    }
                }
                return (stream.operation.timings?.lastTransfer.httpVersion, text + pending)
            }
            #expect(text == (0..<200).map { "round \($0);" }.joined())
            #expect(version == (route == .nginxHTTP2 ? "2" : "1.1"))
        }

        /// The operation door: a `StreamedRequestBody` as the request's `httpBodyStream`, its
        /// response collected as usual.
        @Test func theOperationDoorSendsAWrittenBody() async throws {
            var request = URLRequest(url: testServer.url(.echo))
            request.httpMethod = "POST"
            request.httpBodyStream = StreamedRequestBody { writer in
                for word in ["written ", "while ", "running"] { try await writer.write(Data(word.utf8)) }
            }
            let outcome = try await run(HTTPRequestOperation(request: request))
            let echo = try echoed(outcome)
            #expect(echo["body"] as? String == "written while running")
            #expect((echo["headers"] as? [String: String])?["transfer-encoding"] == "chunked")
        }

        /// With a length, the body is sent with `Content-Length`, not chunked.
        @Test func aKnownLengthIsTheContentLength() async throws {
            let body = HTTPRequestBody.restartable(knownLength: 11) { writer in
                try await writer.write(Data("hello ".utf8))
                try await writer.write(Data("world".utf8))
                return nil
            }
            let (_, data) = try await HTTPRequestOperationManager().perform(HTTPRequest(method: .put, url: testServer.url(.echo)), body: body)
            let echo = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(echo["body"] as? String == "hello world")
            #expect((echo["headers"] as? [String: String])?["content-length"] == "11")
            #expect((echo["headers"] as? [String: String])?["transfer-encoding"] == nil)
        }

        /// A writer that writes fewer or more bytes than it declared fails the request: a
        /// body that lies about its length is never sent as if whole.
        @Test(arguments: [5, 15])
        func aWriterThatMissesItsLengthFails(writing count: Int) async throws {
            let body = HTTPRequestBody.restartable(knownLength: 10) { writer in
                try await writer.write(Data(repeating: 0x41, count: count))
                return nil
            }
            let error = await #expect(throws: URLError.self) {
                _ = try await HTTPRequestOperationManager().perform(HTTPRequest(method: .post, url: testServer.url(.echo)), body: body)
            }
            #expect(error?.code == .requestBodyStreamExhausted, "\(String(describing: error))")
        }

        /// What the writer throws fails the request, and is kept as the underlying error.
        @Test func aWriterThatThrowsFailsTheRequest() async throws {
            struct SourceBroke: Error {}
            let body = HTTPRequestBody.restartable { writer in
                try await writer.write(Data("half".utf8))
                throw SourceBroke()
            }
            let error = await #expect(throws: URLError.self) {
                _ = try await HTTPRequestOperationManager().perform(HTTPRequest(method: .post, url: testServer.url(.echo)), body: body)
            }
            #expect(error?.code == .requestBodyStreamExhausted)
            #expect(error?.userInfo[NSUnderlyingErrorKey] is SourceBroke, "\(String(describing: error))")
        }

        /// A 307 sends the body again: a restartable body's closure runs again, from the first
        /// byte; a `.once` body fails instead of sending half a body or none.
        @Test func a307RunsTheWriterAgainOrFailsAOneShotBody() async throws {
            let runs = Mutex(0)
            let restartable = HTTPRequestBody.restartable { writer in
                runs.withLock { $0 += 1 }
                try await writer.write(Data("sent twice".utf8))
                return nil
            }
            let target = testServer.url(.redirectTo("/echo", status: 307))
            let (_, data) = try await HTTPRequestOperationManager().perform(HTTPRequest(method: .post, url: target), body: restartable)
            let echo = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(echo["body"] as? String == "sent twice")
            #expect(echo["path"] as? String == "/echo")
            #expect(runs.withLock { $0 } == 2)

            let once = HTTPRequestBody.once { writer in
                try await writer.write(Data("sent once".utf8))
                return nil
            }
            let error = await #expect(throws: URLError.self) {
                _ = try await HTTPRequestOperationManager().perform(HTTPRequest(method: .post, url: target), body: once)
            }
            #expect(error?.code == .requestBodyStreamExhausted)
        }

        /// Bytes a writer has written, read while it runs.
        final class WrittenCount: Sendable {
            let bytes = Atomic<Int>(0)
        }

        /// Starts a writer of `chunkSize`-byte writes (256 MiB or more in all) to a server that
        /// stopped reading, and returns once its count stayed the same for half a second: it
        /// waits for room now.
        static func stalledWriter(writing chunkSize: Int) async throws -> (HTTPRequestOperation, WrittenCount) {
            let written = WrittenCount()
            let chunk = Data(repeating: 0x5A, count: chunkSize)
            let body = HTTPRequestBody.restartable { writer in
                for _ in 0..<4096 {
                    try await writer.write(chunk)
                    written.bytes.add(chunk.count, ordering: .relaxed)
                }
                return nil
            }
            let manager = HTTPRequestOperationManager()
            let operation = try manager.httpRequestOperation(for: HTTPRequest(method: .post, url: deafServer.baseURL), body: body)
            manager.enqueue(operation)
            var last = -1
            for _ in 0..<40 where last != written.bytes.load(ordering: .relaxed) {
                last = written.bytes.load(ordering: .relaxed)
                try await Task.sleep(for: .milliseconds(500))
            }
            return (operation, written)
        }

        /// Backpressure, writer side: against a server that stopped reading, `write` stops
        /// returning once the socket buffers and 256 KiB are full, instead of taking all the
        /// writer has into memory.
        @Test func aWriterWaitsForAServerThatStoppedReading() async throws {
            let (operation, written) = try await Self.stalledWriter(writing: 64 << 10)
            operation.cancel()
            try await waitUntilFinished(operation)
            let total = written.bytes.load(ordering: .relaxed)
            print("aWriterWaitsForAServerThatStoppedReading: \(total >> 10) KiB written before the writer waited")
            #expect(total > 0)
            #expect(total < 16 << 20, "\(total) bytes written to a server that reads nothing")
        }

        /// A writer waiting for room suspends: found by review, a write that did not fit while
        /// the queue was partly full woke itself at once, again and again (a core spun for as
        /// long as the server did not read). Writes of 100,000 bytes never fit exactly.
        @Test func aWaitingWriterDoesNotSpin() async throws {
            let (operation, written) = try await Self.stalledWriter(writing: 100_000)
            // The writer waits now: over one second, the process should do next to nothing.
            let before = try Self.processCPUTime()
            try await Task.sleep(for: .seconds(1))
            let spent = try Self.processCPUTime() - before
            operation.cancel()
            try await waitUntilFinished(operation)
            print("aWaitingWriterDoesNotSpin: \(written.bytes.load(ordering: .relaxed) >> 10) KiB written, then \(spent) s of CPU in 1 s of waiting")
            #expect(spent < 0.3, "the waiting writer used \(spent) s of CPU in 1 s")
        }

        /// A request that ends early (its handler returned with the response unread) ends its
        /// writer: the next `write` throws instead of waiting forever.
        @Test func anEndedRequestEndsItsWriter() async throws {
            let writerEnded = TestSignal("the writer's end")
            let body = HTTPRequestBody.restartable { writer in
                do {
                    while true { try await writer.write(Data("more ".utf8)) }
                } catch {
                    writerEnded.fire()
                    throw error
                }
            }
            let first = try await HTTPRequestOperationManager().perform(HTTPRequest(method: .post, url: testServer.baseURL.appendingPathComponent("duplex/echo")),
                                                                        body: body) { _, stream in
                for try await chunk in stream { return chunk }
                return Data()
            }
            #expect(!first.isEmpty)
            try await writerEnded.wait(timeout: .seconds(10))
        }
    }
}
