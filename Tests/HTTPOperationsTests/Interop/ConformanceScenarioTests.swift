import Foundation
import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Testing

extension AllTests {
    /// The Swift HTTP client API's conformance scenarios (apple/swift-http-api-proposal,
    /// `HTTPClientConformance`), re-expressed through the HTTPTypes door with our own server
    /// endpoints (issue 26). One test per scenario, named after it; what differs from the
    /// suite's assertions, and why, is in Docs/HTTPTypesDoor.md.
    @Suite struct ConformanceScenarios {
        /// Wire-level answers written by hand.
        static let raw = faultServer { path -> [FaultStep] in
            switch path {
            case "/200": return reply("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n")
            case "/404": return reply("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n")
            case "/999": return reply("HTTP/1.1 999 Something New\r\nContent-Length: 0\r\n")
            case "/no-reason": return reply("HTTP/1.1 200\r\nContent-Length: 2\r\n", body: "ok")
            case "/gzip": return reply("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(gzipBody.count)\r\n", bytes: gzipBody)
            case "/deflate": return reply("HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: \(deflateBody.count)\r\n", bytes: deflateBody)
            case "/brotli": return reply("HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: \(brotliBody.count)\r\n", bytes: brotliBody)
            case "/identity": return reply("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", body: "TEST\n")
            case "/multi-value":
                return reply("HTTP/1.1 200 OK\r\nX-Multi: one\r\nX-Multi: two\r\nContent-Length: 0\r\n")
            case "/head-length": return reply("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n")
            case "/204-length": return reply("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n")
            case "/304-length": return reply("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nETag: \"v1\"\r\n")
            case "/incomplete":
                return [.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly some".utf8)), .closeWithFIN]
            case "/no-length":
                return [.send(Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end".utf8)), .closeWithFIN]
            case "/empty-chunked":
                return [.send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8)), .closeWithFIN]
            case "/not-http":
                return reply("Http/1.1 500 Internal Server Error\r\nContent-Length: 15\r\n", body: "server exploded")
            case "/conflicting-length": return reply("HTTP/1.1 200 OK\r\nContent-Length: 4, 10\r\n", body: "body")
            case "/trailers":
                return [.send(Array(("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"
                                     + "4\r\nbody\r\n0\r\nX-Checksum: sha-abc\r\n\r\n").utf8)), .closeWithFIN]
            case "/redirect-ping": return reply("HTTP/1.1 302 Found\r\nLocation: /redirect-pong\r\nContent-Length: 0\r\n")
            case "/redirect-pong": return reply("HTTP/1.1 302 Found\r\nLocation: /redirect-ping\r\nContent-Length: 0\r\n")
            case "/slow-head":
                return [.wait(.seconds(5)), .send(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)), .closeWithFIN]
            case "/slow-body":
                return [.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n".utf8)), .wait(.seconds(5)),
                        .send(Array("ok".utf8)), .closeWithFIN]
            case "/drip":
                return [.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n".utf8)),
                        .drip(Array("0123456789".utf8), interval: .milliseconds(20)), .closeWithFIN]
            case "/long":
                return [.send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)),
                        .sendForever(chunk: { _ in Array("400\r\n\(String(repeating: "x", count: 1024))\r\n".utf8) },
                                     interval: .milliseconds(1))]
            default: return reply("HTTP/1.1 418 Unexpected Path\r\nContent-Length: 0\r\n")
            }
        }

        static let gzipBody: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x0b, 0x71, 0x0d, 0x0e,
                                        0xe1, 0x02, 0x00, 0xbe, 0xd7, 0x83, 0xf7, 0x05, 0x00, 0x00, 0x00]
        static let deflateBody: [UInt8] = [0x78, 0x9c, 0x0b, 0x71, 0x0d, 0x0e, 0xe1, 0x02, 0x00, 0x04, 0x68, 0x01, 0x4b]
        static let brotliBody: [UInt8] = [0x0b, 0x02, 0x80, 0x54, 0x45, 0x53, 0x54, 0x0a, 0x03]

        /// A head (status line and fields, without the blank line) and a body, then a FIN.
        static func reply(_ head: String, body: String = "", bytes: [UInt8]? = nil) -> [FaultStep] {
            [.send(Array((head + "Connection: close\r\n\r\n").utf8) + (bytes ?? Array(body.utf8))), .closeWithFIN]
        }

        let manager = HTTPRequestOperationManager()

        func raw(_ path: String, _ method: HTTPRequest.Method = .get) -> HTTPRequest {
            HTTPRequest(method: method, url: Self.raw.baseURL.appendingPathComponent(String(path.dropFirst())))
        }

        func server(_ endpoint: Endpoint, _ method: HTTPRequest.Method = .get) -> HTTPRequest {
            HTTPRequest(method: method, url: testServer.url(endpoint))
        }

        /// What the in-process server's echo saw.
        struct Echo: Decodable, Sendable {
            let method: String
            let headers: [String: String]
            let body: String?
        }

        // MARK: - Statuses

        @Test(arguments: [HTTPRequest.Method.head, .get, .put, .post, .delete])
        func ok(method: HTTPRequest.Method) async throws {
            let (response, body) = try await manager.perform(raw("/200", method))
            #expect(response.status == .ok)
            #expect(body.isEmpty)
        }

        @Test func notFound() async throws {
            let (response, body) = try await manager.perform(raw("/404"))
            #expect(response.status == .notFound)
            #expect(body.isEmpty)
        }

        @Test func statusOutOfRangeButValid() async throws {
            let (response, _) = try await manager.perform(raw("/999"))
            #expect(response.status.code == 999)
        }

        @Test func noReasonPhrase() async throws {
            let (response, body) = try await manager.perform(raw("/no-reason"))
            #expect(response.status == .ok)
            #expect(body == Data("ok".utf8))
        }

        /// `Http/1.1` is not HTTP (RFC 9112 §2.3: the name is case-sensitive): an error, never an
        /// answer, whatever its status says.
        @Test func notHTTP() async throws {
            await #expect(throws: URLError.self) { _ = try await manager.perform(raw("/not-http")) }
        }

        /// Differing `Content-Length` values (RFC 9112 §6.3): an error.
        @Test func conflictingContentLength() async throws {
            await #expect(throws: URLError.self) { _ = try await manager.perform(raw("/conflicting-length")) }
        }

        // MARK: - The suite's conveniences

        /// The suite's GET convenience (`client.get(url:collectUpTo:)`, a protocol extension
        /// of the proposal's `HTTPClient`): here a GET made from a `URL`, its body collected.
        @Test func getConvenience() async throws {
            let (response, data) = try await manager.perform(HTTPRequest(method: .get, url: testServer.url(.echo)))
            #expect(response.status == .ok)
            let echo = try JSONDecoder().decode(Echo.self, from: data)
            #expect(echo.method == "GET")
            #expect(echo.body == "")
        }

        /// The suite's POST convenience (`client.post(url:bodyData:collectUpTo:)`): a POST made
        /// from a `URL` with a `Data` body.
        @Test func postConvenience() async throws {
            let (response, data) = try await manager.perform(HTTPRequest(method: .post, url: testServer.url(.echo)),
                                                             body: .data(Data("Hello World".utf8)))
            #expect(response.status == .ok)
            let echo = try JSONDecoder().decode(Echo.self, from: data)
            #expect(echo.method == "POST")
            #expect(echo.body == "Hello World")
        }

        // MARK: - Bodies and encodings

        @Test func echoString() async throws {
            let (response, echo) = try await manager.perform(server(.echo, .post), body: .data(Data("Hello World".utf8)), decoding: Echo.self)
            #expect(response.status == .ok)
            #expect(echo.body == "Hello World")
        }

        @Test(arguments: ["/gzip", "/deflate", "/brotli", "/identity"])
        func contentEncoding(path: String) async throws {
            let (response, body) = try await manager.perform(raw(path))
            #expect(response.status == .ok)
            #expect(String(decoding: body, as: UTF8.self) == "TEST\n", "\(path)")
        }

        @Test func echo1MBBody() async throws {
            let sent = String(repeating: "0123456789", count: 100_000)
            let (response, echo) = try await manager.perform(server(.echo, .post), body: .data(Data(sent.utf8)), decoding: Echo.self)
            #expect(response.status == .ok)
            #expect(echo.body?.count == 1_000_000)
            #expect(echo.body == sent)
        }

        @Test func headWithContentLength() async throws {
            let (response, body) = try await manager.perform(raw("/head-length", .head))
            #expect(response.status == .ok)
            #expect(response.headerFields[.contentLength] == "1000")
            #expect(body.isEmpty)
        }

        /// RFC 9110 §8.6: a 204 or 304 has no body whatever `Content-Length` says.
        @Test(arguments: ["/204-length", "/304-length"])
        func noBodyStatusWithContentLength(path: String) async throws {
            let (response, body) = try await manager.perform(raw(path))
            #expect([204, 304].contains(response.status.code))
            #expect(body.isEmpty)
        }

        /// A body shorter than its `Content-Length` is an error, never a short success.
        @Test func incompleteBody() async throws {
            await #expect(throws: URLError.self) { _ = try await manager.perform(raw("/incomplete")) }
        }

        /// No length: the body runs until the server closes (RFC 9112 §6.3).
        @Test func noLengthHint() async throws {
            let (_, body) = try await manager.perform(raw("/no-length"))
            #expect(body == Data("until the end".utf8))
        }

        @Test func emptyChunkedBody() async throws {
            let (response, body) = try await manager.perform(raw("/empty-chunked"))
            #expect(response.status == .ok)
            #expect(body.isEmpty)
        }

        // MARK: - Header fields

        @Test func customHeader() async throws {
            var request = server(.echo, .post)
            request.headerFields[HTTPField.Name("X-Foo")!] = "BARbaz"
            let (_, echo) = try await manager.perform(request, body: .data(Data("Hello World".utf8)), decoding: Echo.self)
            #expect(echo.headers["x-foo"] == "BARbaz")
        }

        @Test func clientSendsEmptyHeaderValue() async throws {
            var request = server(.echo)
            request.headerFields[HTTPField.Name("X-Empty")!] = ""
            let (_, echo) = try await manager.perform(request, decoding: Echo.self)
            #expect(echo.headers["x-empty"] == "")
        }

        @Test func serverSendsMultiValueHeader() async throws {
            let (response, _) = try await manager.perform(raw("/multi-value"))
            #expect(response.headerFields[values: HTTPField.Name("X-Multi")!] == ["one", "two"])
        }

        @Test func clientSendsMultiValueHeader() async throws {
            var request = server(.echo)
            request.headerFields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "one"))
            request.headerFields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "two"))
            let (_, echo) = try await manager.perform(request, decoding: Echo.self)
            #expect(echo.headers["x-multi"] == "one, two")
        }

        @Test func urlParameters() async throws {
            var components = URLComponents(url: testServer.url(.echo), resolvingAgainstBaseURL: false)!
            components.queryItems = [URLQueryItem(name: "a", value: "1"), URLQueryItem(name: "b", value: "two words")]
            let request = HTTPRequest(method: .get, url: components.url!)
            let (response, body) = try await manager.perform(request)
            #expect(response.status == .ok)
            let echoed = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            let query = try #require(echoed["query"] as? [String: String], "\(echoed)")
            #expect(query == ["a": "1", "b": "two words"])
        }

        // MARK: - Redirects

        @Test(arguments: [301, 308])
        func basicRedirect(status: Int) async throws {
            let request = server(.redirectTo(testServer.url(.echo).absoluteString, status: status))
            let (response, echo) = try await manager.perform(request, decoding: Echo.self)
            #expect(response.status == .ok)
            #expect(echo.method == "GET")
            #expect(echo.body == nil || echo.body == "")
        }

        /// A 307 keeps the method and the body (the proposal's restartable body, re-sent).
        @Test func redirect307ResendsTheBody() async throws {
            let request = server(.redirectTo(testServer.url(.echo).absoluteString, status: 307), .post)
            let (response, echo) = try await manager.perform(request, body: .data(Data("again".utf8)), decoding: Echo.self)
            #expect(response.status == .ok)
            #expect(echo.method == "POST")
            #expect(echo.body == "again")
        }

        @Test func infiniteRedirect() async throws {
            await #expect(throws: (any Error).self) { _ = try await manager.perform(raw("/redirect-ping")) }
        }

        // MARK: - Concurrency, cancellation, reading

        @Test func stressTest() async throws {
            let manager = manager
            let request = server(.bytes(100))
            let count = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        let (response, body) = try await manager.perform(request)
                        #expect(response.status == .ok)
                        return body.count
                    }
                }
                return try await group.reduce(0) { $0 + ($1 == 100 ? 1 : 0) }
            }
            #expect(count == 100)
        }

        @Test func cancelPreHeaders() async throws {
            let manager = manager
            let request = raw("/slow-head")
            let task = Task { try await manager.perform(request) }
            try await Task.sleep(for: .milliseconds(100))
            task.cancel()
            await #expect(throws: (any Error).self) { _ = try await task.value }
        }

        @Test func cancelPreBody() async throws {
            let manager = manager
            let request = raw("/slow-body")
            let headSeen = TestSignal("head")
            let task = Task {
                try await manager.perform(request) { response, body in
                    #expect(response.status == .ok)
                    headSeen.fire()
                    var collected = Data()
                    for try await chunk in body { collected.append(chunk) }
                    return collected
                }
            }
            try await headSeen.wait()
            task.cancel()
            await #expect(throws: (any Error).self) { _ = try await task.value }
        }

        @Test func underRead() async throws {
            let first = try await manager.perform(raw("/long")) { _, body in
                var iterator = body.makeAsyncIterator()
                return try await iterator.next()?.count ?? 0
            }
            #expect(first > 0)
            // The manager still works: the abandoned transfer was cancelled, not leaked.
            #expect(try await manager.perform(raw("/200")).response.status == .ok)
        }

        @Test func dripReadBody() async throws {
            let chunks = try await manager.perform(raw("/drip")) { _, body in
                var pieces: [Data] = []
                for try await chunk in body { pieces.append(chunk) }
                return pieces
            }
            #expect(chunks.reduce(Data(), +) == Data("0123456789".utf8))
            // Yielded as they came (each byte 20 ms apart), not gathered to the end.
            #expect(chunks.count >= 5, "\(chunks.map(\.count))")
        }

        @Test func trailersRead() async throws {
            let checksum = try await manager.perform(raw("/trailers")) { _, body in
                var collected = Data()
                for try await chunk in body { collected.append(chunk) }
                #expect(collected == Data("body".utf8))
                return body.operation.responseTrailers[HTTPField.Name("X-Checksum")!]
            }
            #expect(checksum == "sha-abc")
        }
    }
}
