import Foundation
import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Synchronization
import Testing

extension AllTests {
    /// The swift-http-types door (issue 26): `HTTPRequest` in, `HTTPResponse` out, on the same
    /// operations and queue as the AFNetworking-style door.
    @Suite struct HTTPTypesDoor {
        /// Raw replies for what the in-process server does not say: repeated fields.
        static let server = faultServer { path in
            if path == "/latin-1-trailer" {
                let reply = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n2\r\nok\r\n0\r\nX-Sum: caf".utf8)
                    + [0xE9] + Array("\r\n\r\n".utf8)
                return [.send(reply), .closeWithFIN]
            }
            if path == "/latin-1" {
                // A field value in ISO-8859-1 (obs-text, RFC 9110 §5.5): "café" with 0xE9.
                let head = Array("HTTP/1.1 200 OK\r\nX-Name: caf".utf8) + [0xE9]
                    + Array("\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
                return [.send(head), .closeWithFIN]
            }
            let reply = "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT\r\n"
                + "Set-Cookie: b=2\r\nX-Order: first\r\nx-order: second\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            return [.send(Array(reply.utf8)), .closeWithFIN]
        }

        /// A field value that is not UTF-8 reaches the caller with the bytes received; its
        /// `value` string shows them repaired, as swift-http-types does.
        @Test func aFieldValueThatIsNotUTF8KeepsItsBytes() async throws {
            let manager = HTTPRequestOperationManager()
            let (response, body) = try await manager.perform(request(Self.server.baseURL.appendingPathComponent("latin-1")))
            #expect(body == Data("ok".utf8))
            let name = try #require(HTTPField.Name("X-Name"))
            let field = try #require(response.headerFields.first { $0.name == name })
            #expect(field.value == "caf\u{FFFD}")
            #expect(field.withUnsafeBytesOfValue { Array($0) } == [0x63, 0x61, 0x66, 0xE9])
            // The same for a trailer field.
            let operation = try manager.httpRequestOperation(for: request(Self.server.baseURL.appendingPathComponent("latin-1-trailer")))
            _ = try await manager.run(operation, as: Data.self)
            #expect(operation.responseData == Data("ok".utf8))
            let sum = try #require(operation.responseTrailers.first { $0.name == HTTPField.Name("X-Sum")! })
            #expect(sum.withUnsafeBytesOfValue { Array($0) } == [0x63, 0x61, 0x66, 0xE9])
        }

        /// `HTTPRequest` for `url`.
        private func request(_ url: URL, _ method: HTTPRequest.Method = .get) -> HTTPRequest {
            HTTPRequest(method: method, url: url)
        }

        @Test func aGetAnswersWithTheStatusTheFieldsAndTheBody() async throws {
            let manager = HTTPRequestOperationManager()
            let (response, body) = try await manager.perform(request(testServer.url(.bytes(1_000))))
            #expect(response.status == .ok)
            #expect(response.headerFields[.contentLength] == "1000")
            #expect(body.count == 1_000)
        }

        /// `collectUpTo:` bounds the body collected, announced (`Content-Length`) or not
        /// (chunked): at the limit it is the body, one byte over it a typed error; the
        /// decoding `perform` takes the same limit.
        @Test(arguments: [false, true])
        func aBodyIsCollectedUpToTheLimit(chunked: Bool) async throws {
            let manager = HTTPRequestOperationManager()
            let url = testServer.url(chunked ? .chunked(1_000) : .bytes(1_000))
            let (response, body) = try await manager.perform(request(url), collectUpTo: 1_000)
            #expect(response.status == .ok)
            #expect(body == TestServer.pattern(count: 1_000))
            let error = await #expect(throws: TransferError.self) {
                try await manager.perform(request(url), collectUpTo: 999)
            }
            #expect(error?.code == .bodyTooLarge)
            struct Echo: Decodable, Sendable { let method: String }
            let echo = request(testServer.url(.echo))
            #expect(try await manager.perform(echo, decoding: Echo.self, collectUpTo: 10_000).value.method == "GET")
            await #expect(throws: TransferError.self) {
                try await manager.perform(echo, decoding: Echo.self, collectUpTo: 10)
            }
        }

        /// The limit holds for every answer the door collects: an error answer's body (the
        /// door's answer too), an answer from the cache, and a later `perform` without a limit
        /// is not held to it. A HEAD has no body, whatever its `Content-Length` says.
        @Test func theLimitHoldsForEveryAnswerWithABody() async throws {
            let manager = HTTPRequestOperationManager()
            manager.defaultConfiguration.cache = try HTTPCache()
            let explained = request(testServer.url(.jsonStatus(404)))
            let error = await #expect(throws: TransferError.self) { try await manager.perform(explained, collectUpTo: 10) }
            #expect(error?.code == .bodyTooLarge)
            #expect(try await manager.perform(explained).response.status.code == 404)
            let stored = request(testServer.url(.cacheable(key: "limit-\(UUID())", cacheControl: "max-age=600")))
            let (_, first) = try await manager.perform(stored)
            #expect(first.count > 3)
            let fromCache = await #expect(throws: TransferError.self) { try await manager.perform(stored, collectUpTo: 3) }
            #expect(fromCache?.code == .bodyTooLarge)
            #expect(try await manager.perform(stored, collectUpTo: first.count).body == first)
            let (head, nothing) = try await manager.perform(request(testServer.url(.bytes(1_000)), .head), collectUpTo: 10)
            #expect(head.status == .ok)
            #expect(head.headerFields[.contentLength] == "1000")
            #expect(nothing.isEmpty)
        }

        /// Every status is an answer: a 404 and a 500 are responses with their bodies, not errors.
        @Test(arguments: [404, 500])
        func everyStatusIsAnAnswer(status: Int) async throws {
            let manager = HTTPRequestOperationManager()
            let (response, _) = try await manager.perform(request(testServer.url(.status(status))))
            #expect(response.status.code == status)
        }

        /// The method, repeated request fields and the body go out; the echo says what came.
        @Test func theMethodFieldsAndBodyGoOut() async throws {
            let manager = HTTPRequestOperationManager()
            var outgoing = request(testServer.url(.echo), .put)
            outgoing.headerFields[.contentType] = "text/plain"
            outgoing.headerFields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "one"))
            outgoing.headerFields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "two"))
            struct Echo: Decodable, Sendable {
                let method: String
                let headers: [String: String]
                let body: String?
            }
            let (response, echo) = try await manager.perform(outgoing, body: .data(Data("hello".utf8)), decoding: Echo.self)
            #expect(response.status == .ok)
            #expect(echo.method == "PUT")
            #expect(echo.body == "hello")
            #expect(echo.headers["x-multi"] == "one, two", "\(echo.headers)")
        }

        /// Repeated response fields stay apart and in order (two `Set-Cookie`, one with a
        /// comma in its date), where `HTTPURLResponse` joins them.
        @Test func repeatedResponseFieldsStayApart() async throws {
            let manager = HTTPRequestOperationManager()
            let (response, body) = try await manager.perform(request(Self.server.baseURL.appendingPathComponent("fields")))
            #expect(body == Data("ok".utf8))
            #expect(response.headerFields[values: .setCookie] == ["a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT", "b=2"])
            #expect(response.headerFields[values: HTTPField.Name("X-Order")!] == ["first", "second"])
        }

        @Test func aBodyThatIsNotTheTypeIsADecodingError() async throws {
            let manager = HTTPRequestOperationManager()
            struct Shape: Decodable, Sendable { let width: Int }
            await #expect(throws: ResponseSerializationError.self) {
                _ = try await manager.perform(request(testServer.url(.bytes(10))), decoding: Shape.self)
            }
        }

        /// A path alone is resolved against the manager's base URL; with no base URL it is a
        /// typed error, and nothing is sent.
        @Test func aPathIsResolvedAgainstTheBaseURL() async throws {
            let relative = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/bytes/5")
            let manager = HTTPRequestOperationManager(baseURL: testServer.url(.echo).deletingLastPathComponent())
            let (response, body) = try await manager.perform(relative)
            #expect(response.status == .ok)
            #expect(body.count == 5)
            #expect(throws: RequestSerializationError.self) {
                _ = try HTTPRequestOperationManager().httpRequestOperation(for: relative)
            }
        }

        /// The door's operations are the engine's: they take dependencies and run on the
        /// manager's queue; the second starts only after the first finished.
        @Test func itsOperationsChainLikeAnyOther() async throws {
            let manager = HTTPRequestOperationManager()
            let first = try manager.httpRequestOperation(for: request(testServer.url(.delay(milliseconds: 100))))
            let second = try manager.httpRequestOperation(for: request(testServer.url(.bytes(10))))
            second.addDependency(first)
            let firstFinishedBeforeSecondStarted = Mutex<Bool?>(nil)
            second.setDownloadProgressBlock { _, _, _ in
                firstFinishedBeforeSecondStarted.withLock { $0 = $0 ?? first.isFinished }
            }
            let recorder = OutcomeRecorder()
            recorder.watch(first)
            recorder.watch(second)
            manager.enqueue(second)
            manager.enqueue(first)
            try await recorder.done.wait(times: 2)
            #expect(first.httpResponse?.status == .ok)
            #expect(second.httpResponse?.status == .ok)
            #expect(firstFinishedBeforeSecondStarted.withLock { $0 } == true)
        }
    }
}

extension AllTests.HTTPTypesDoor {
    /// The handler is called when the head arrives, before any of the body: the server here
    /// sends its head and then waits for the handler to have run before it sends the body (a
    /// handler called only with the first chunk would never be).
    @Test func theHandlerGetsTheHeadBeforeTheBody() async throws {
        let handlerRan = DispatchSemaphore(value: 0)
        let server = try FaultServer.start { _ -> [FaultStep] in
            [.send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Stage: head\r\n\r\n".utf8)),
             .run { _ = handlerRan.wait(timeout: .now() + 10) },
             .send(Array("4\r\nbody\r\n0\r\n\r\n".utf8)), .closeWithFIN]
        }
        let manager = HTTPRequestOperationManager()
        let body = try await manager.perform(HTTPRequest(method: .get, url: server.baseURL)) { response, body in
            #expect(response.headerFields[HTTPField.Name("X-Stage")!] == "head")
            handlerRan.signal()
            var collected = Data()
            for try await chunk in body { collected.append(chunk) }
            return collected
        }
        #expect(body == Data("body".utf8))
    }

    /// An error answer's body is the body here, streamed like any other.
    @Test func aNotFoundBodyIsStreamed() async throws {
        let manager = HTTPRequestOperationManager()
        let (status, count) = try await manager.perform(HTTPRequest(method: .get, url: testServer.url(.jsonStatus(404)))) { response, body in
            var count = 0
            for try await chunk in body { count += chunk.count }
            return (response.status.code, count)
        }
        #expect(status == 404)
        #expect(count == #"{"status":404,"message":"error 404 explained"}"#.utf8.count)
    }

    /// A handler that returns before the end of the body cancels the rest: the operation
    /// ends (cancelled) and the server stops being read.
    @Test func aHandlerThatStopsReadingCancelsTheRest() async throws {
        let server = try FaultServer.start { _ -> [FaultStep] in
            [.send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)),
             .sendForever(chunk: { index in Array("6\r\nchunk\(index % 10)\r\n".utf8) }, interval: .milliseconds(5))]
        }
        let manager = HTTPRequestOperationManager()
        let operation = try await manager.perform(HTTPRequest(method: .get, url: server.baseURL)) { _, body in
            var iterator = body.makeAsyncIterator()
            _ = try await iterator.next()
            return body.operation
        }
        // Finished already, or about to: waited for off the cooperative pool.
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                operation.waitUntilFinished()
                finished.resume()
            }
        }
        #expect((operation.error as? URLError)?.code == .cancelled, "\(String(describing: operation.error))")
    }
}

extension AllTests {
    /// What the HTTPTypes door sends is what the `HTTPRequest` names: its origin and its
    /// fields' bytes.
    @Suite struct HTTPTypesDoorWire {
        /// A server that records each request head's target and `X-Name` value.
        static func recordingServer(_ seen: LineLog) throws -> FaultServer {
            try FaultServer.startWithHeads({ request in
                seen.append("\(request.path) \(request.field("X-Name") ?? "-")")
                return [.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)), .closeWithFIN]
            })
        }

        /// The report: `é` arrived as `c3 83 c2 a9` (read as ISO-8859-1, written as UTF-8).
        @Test func aFieldValuesBytesGoToTheWireAsTheyAre() async throws {
            let seen = LineLog()
            let server = try Self.recordingServer(seen)
            var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/v")
            request.headerFields[HTTPField.Name("X-Name")!] = "café"
            let (response, _) = try await HTTPRequestOperationManager().perform(request)
            #expect(response.status == .ok)
            #expect(seen.all == ["/v café"])

            // Bytes that are not UTF-8 cannot be carried as they are: refused, nothing sent.
            var latin = request
            latin.headerFields = HTTPFields([HTTPField(name: HTTPField.Name("X-Name")!, lenientValue: [0x63, 0xE9])])
            await #expect(throws: RequestSerializationError.self) { _ = try await HTTPRequestOperationManager().perform(latin) }
            #expect(seen.all.count == 1)
        }

        /// The report: a path that is an absolute URL went to the server it names. A request
        /// target is origin-form (`*` for OPTIONS); anything else is refused.
        @Test func aPathThatNamesAnotherOriginIsRefused() async throws {
            let seen = LineLog(), elsewhere = LineLog()
            let server = try Self.recordingServer(seen)
            let other = try Self.recordingServer(elsewhere)
            let manager = HTTPRequestOperationManager(baseURL: URL(string: "http://127.0.0.1:\(server.port)/"))
            for path in ["http://127.0.0.1:\(other.port)/x", "//127.0.0.1:\(other.port)/x", "127.0.0.1:\(other.port)/x"] {
                let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
                await #expect(throws: RequestSerializationError.self, "\(path)") { _ = try await manager.perform(request) }
                guard !path.hasPrefix("//") else { continue }
                let full = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path)
                await #expect(throws: RequestSerializationError.self, "\(path)") { _ = try await manager.perform(full) }
            }
            // With its own authority, `//x` is a path (an empty first segment), sent there.
            let own = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "//x")
            #expect(try await manager.perform(own).response.status == .ok)
            let star = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "*")
            await #expect(throws: RequestSerializationError.self) { _ = try await manager.perform(star) }
            let (response, _) = try await manager.perform(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/here"))
            #expect(response.status == .ok)
            #expect(elsewhere.all.isEmpty, "the other origin saw \(elsewhere.all)")
            #expect(seen.all == ["//x -", "/here -"])
        }
    }
}
