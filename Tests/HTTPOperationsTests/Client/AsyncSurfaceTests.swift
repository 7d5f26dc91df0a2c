import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Synchronization
import Testing

/// The typed async surface: Encodable bodies, `as:` on every verb, async multipart, and the
/// body as an AsyncSequence with backpressure.
extension AllTests {
    @Suite struct AsyncSurfaceTests {
        struct Echo: Decodable, Sendable {
            let method: String
            let path: String
            let headers: [String: String]
            let body: String?
        }

        struct Order: Codable, Sendable, Equatable {
            let id: Int
            let items: [String]
        }

        static func manager() -> HTTPRequestOperationManager {
            HTTPRequestOperationManager(baseURL: testServer.url(.echo).deletingLastPathComponent())
        }

        @Test(arguments: ["POST", "PUT", "PATCH"])
        func anEncodableBodyIsSentAsJSONAndTheAnswerDecoded(method: String) async throws {
            let manager = Self.manager()
            let order = Order(id: 7, items: ["tea", "milk"])
            let echo: Echo = switch method {
            case "POST": try await manager.post("echo", body: order, as: Echo.self)
            case "PUT": try await manager.put("echo", body: order, as: Echo.self)
            default: try await manager.patch("echo", body: order, as: Echo.self)
            }
            #expect(echo.method == method)
            #expect(echo.headers["content-type"] == "application/json")
            let sent = try JSONDecoder().decode(Order.self, from: Data(try #require(echo.body).utf8))
            #expect(sent == order)
        }

        @Test func everyVerbDecodes() async throws {
            let manager = Self.manager()
            #expect(try await manager.get("echo", parameters: ["q": "1"], as: Echo.self).method == "GET")
            #expect(try await manager.delete("echo", as: Echo.self).method == "DELETE")
            #expect(try await manager.put("echo", parameters: ["a": "b"], as: Echo.self).method == "PUT")
            #expect(try await manager.patch("echo", as: Echo.self).method == "PATCH")
            #expect(try await manager.post("echo", as: Echo.self).method == "POST")
            // HEAD has no body: EmptyResponse (or an optional) accepts that.
            #expect(try await manager.head("echo", as: EmptyResponse.self) == EmptyResponse())
            #expect(try await manager.send("OPTIONS", "echo", as: Echo.self).method == "OPTIONS")
        }

        /// A HEAD is answered without a body whatever its `Content-Length` (0 here) and its
        /// type (`text/plain`): `EmptyResponse` takes it. The serializer knows it asked a HEAD,
        /// so neither the length nor the type decides.
        @Test func aHeadOfAnyLengthAndTypeIsAnEmptyResponse() async throws {
            let manager = Self.manager()
            #expect(try await manager.head("status/200", as: EmptyResponse.self) == EmptyResponse())
            #expect(try await manager.head("text", parameters: ["text": "hello"], as: EmptyResponse.self) == EmptyResponse())
            // A GET of the same empty 200 still needs a body for a type that is not optional.
            // (Here its `text/plain` is refused before the empty body is.)
            await #expect(throws: ResponseValidationError.self) { _ = try await manager.get("status/200", as: EmptyResponse.self) }
        }

        /// A serializer that made another type than asked: the error keeps the body, as every
        /// other serialization error does (it was nil).
        @Test func aTypeMismatchKeepsTheBody() async throws {
            let manager = Self.manager()
            manager.responseSerializer = JSONResponseSerializer()
            let operation = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.echo)), success: nil, failure: nil)
            let error = await #expect(throws: ResponseSerializationError.self) {
                _ = try await manager.run(operation, as: [Int].self)
            }
            #expect(error?.data != nil && error?.data == operation.responseData)
        }

        @Test func aBodyThatDoesNotEncodeIsATypedErrorAndNothingIsSent() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager(baseURL: server.url(.echo).deletingLastPathComponent())
            await #expect(throws: RequestSerializationError.self) {
                _ = try await manager.post("echo", body: ["x": Double.nan], as: Echo.self)
            }
            do {
                _ = try await manager.post("echo", body: ["x": Double.nan], as: Echo.self)
            } catch let error as RequestSerializationError {
                #expect(error.code == .unencodableBody)
            }
            #expect(server.receivedRequests.isEmpty)
        }

        @Test func aMultipartUploadIsAwaited() async throws {
            let manager = Self.manager()
            let file = temporaryFile()
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(count: 300_000).write(to: file)
            struct Summary: Decodable, Sendable { let bodyLength: Int }
            let summary = try await manager.post("upload", parameters: ["name": "x"], constructingBodyWith: { form in
                try form.appendPart(fileURL: file, name: "file")
            }, as: Summary.self)
            #expect(summary.bodyLength > 300_000)
            struct Echoed: Decodable, Sendable { let method: String }
            let echoed = try await manager.post("echo", constructingBodyWith: { form in
                form.appendPart(formData: Data("v".utf8), name: "k")
            }, as: Echoed.self)
            #expect(echoed.method == "POST")
        }

        /// An awaited value comes without a Foundation response being built: building one cost
        /// a sixth of an awaited small GET's CPU (Docs/Performance.md). An error that reports
        /// the response has it; the operation builds its own when asked.
        @Test func anAwaitedValueBuildsNoResponseUnlessAnErrorReportsIt() async throws {
            let manager = Self.manager()
            manager.responseSerializer = HTTPResponseSerializer()
            let operation = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(10))), success: nil, failure: nil)
            #expect(try await manager.run(operation, as: Data.self).count == 10)
            #expect(operation.state.withLock { $0.response } == nil, "the await built a response nobody read")
            #expect(operation.response?.statusCode == 200)
            // Asked for a type its serializer does not make: the error carries the response.
            let mistyped = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(10))), success: nil, failure: nil)
            let error = await #expect(throws: ResponseSerializationError.self) { try await manager.run(mistyped, as: Int.self) }
            #expect(error?.code == .decodingFailed)
            #expect((error?.response as? HTTPURLResponse)?.statusCode == 200)
            // The HTTPTypes door reads the head as received, and builds no Foundation response.
            let made = Mutex<[HTTPRequestOperation]>([])
            manager.operationFactory = { request in
                let operation = HTTPRequestOperation(request: request)
                made.withLock { $0.append(operation) }
                return operation
            }
            let (answer, _) = try await manager.perform(HTTPRequest(method: .get, url: testServer.url(.echo)))
            #expect(answer.status == .ok)
            let door = try #require(made.withLock { $0.first })
            #expect(door.state.withLock { $0.response } == nil)
        }

        /// Awaiting an operation does not keep it alive (an operation holds its dependencies,
        /// a whole chain with its bodies): the awaiting task gets the value, not the operation.
        @Test func anAwaitDoesNotKeepItsOperationsAlive() async throws {
            let manager = Self.manager()
            manager.responseSerializer = HTTPResponseSerializer()
            weak var released: HTTPRequestOperation?
            let body = try await {
                let first = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(100_000))), success: nil, failure: nil)
                let second = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(10))), success: nil, failure: nil)
                second.addDependency(first)
                manager.enqueue(first)
                released = first
                return try await manager.run(second, as: Data.self)
            }()
            #expect(body == TestServer.pattern(count: 10))
            // The queue lets go of a finished operation just after it announced the finish.
            let deadline = ContinuousClock.now + .seconds(10)
            while released != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(released == nil, "awaiting kept the chain alive")
        }

        // MARK: - Streaming

        @Test func aBodyStreamsInOrderByteExact() async throws {
            let size = 5_000_000
            let body = Self.manager().stream(URLRequest(url: testServer.url(.bytes(size))))
            var received = Data()
            var chunks = 0
            for try await chunk in body {
                #expect(chunk.count <= BodyWriter.bufferSize)
                received.append(chunk)
                chunks += 1
            }
            #expect(received == TestServer.pattern(count: size))
            #expect(chunks >= size / BodyWriter.bufferSize)
            #expect(body.operation.response?.statusCode == 200 && body.operation.responseData == nil)
        }

        @Test func theStreamTakesThePlaceOfAFileDestination() async throws {
            let manager = Self.manager()
            let file = temporaryFile()
            defer { removeDownload(file) }
            let operation = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(1_000))), success: nil, failure: nil)
            operation.responseSerializer = HTTPResponseSerializer()
            operation.destinationURL = file
            let body = ResponseBodyStream(operation)
            manager.enqueue(operation)
            var received = Data()
            for try await chunk in body { received.append(chunk) }
            #expect(received == TestServer.pattern(count: 1_000))
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }

        @Test func aSmallBodyArrivesWhole() async throws {
            var received = Data()
            for try await chunk in Self.manager().stream(URLRequest(url: testServer.url(.bytes(100)))) { received.append(chunk) }
            #expect(received == TestServer.pattern(count: 100))
        }

        @Test func aSlowConsumerHoldsTheTransferBack() async throws {
            // 16 MB to a loop that takes 20 ms per chunk (13 MB/s, a third of what the test
            // server sends): without backpressure most of the body would wait in memory.
            let size = 16_000_000
            let manager = Self.manager()
            let operation = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(size))), success: nil, failure: nil)
            operation.responseSerializer = HTTPResponseSerializer()
            let body = ResponseBodyStream(operation)
            let consumed = Atomic<Int64>(0)
            let mostAhead = Atomic<Int64>(0)
            operation.setDownloadProgressBlock { _, total, _ in
                mostAhead.max(total - consumed.load(ordering: .relaxed), ordering: .relaxed)
            }
            manager.enqueue(operation)
            var count = 0
            for try await chunk in body {
                try await Task.sleep(for: .milliseconds(20))
                consumed.add(Int64(chunk.count), ordering: .relaxed)
                count += chunk.count
            }
            #expect(count == size)
            // Chunks waiting for the loop, the buffer being filled, and what curl holds
            // while paused: well under 4 MiB, against 8 MB and more without backpressure.
            let ahead = mostAhead.load(ordering: .relaxed)
            #expect(ahead <= Int64(BodyWriter.buffersAhead + 2) * Int64(BodyWriter.bufferSize) + (1 << 20), "\(ahead) bytes ahead")
        }

        /// An error answer's body is never yielded as if it were the resource: the loop
        /// throws before any chunk, and the error carries the body.
        @Test func aRefusedStatusThrowsWithItsBodyAndYieldsNothing() async throws {
            let body = Self.manager().stream(URLRequest(url: testServer.url(.jsonStatus(404))))
            var received = Data()
            do {
                for try await chunk in body { received.append(chunk) }
                Issue.record("a 404 did not throw")
            } catch let error as ResponseValidationError {
                #expect(error.response.statusCode == 404)
                #expect(String(decoding: error.data ?? Data(), as: UTF8.self).contains("error 404 explained"))
            }
            #expect(received.isEmpty)
        }

        @Test func cancellingTheIteratingTaskCancelsTheOperation() async throws {
            let body = Self.manager().stream(URLRequest(url: testServer.url(.delay(milliseconds: 10_000))))
            let task = Task {
                for try await _ in body {}
            }
            try await Task.sleep(for: .milliseconds(100))
            task.cancel()
            await #expect(throws: (any Error).self) { try await task.value }
            try await waitUntilFinished(body.operation, timeout: .seconds(5))
            #expect((body.operation.error as? URLError)?.code == .cancelled)
        }
    }
}
