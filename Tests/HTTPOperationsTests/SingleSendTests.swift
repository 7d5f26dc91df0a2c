import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// A request whose method is not idempotent reaches the server at most once, whatever
    /// libcurl would like to do: curl sends a request again on a fresh connection when the
    /// reused one it went out on closes before any answer ("Connection died, retrying a fresh
    /// connect"), rewinding the body when it can.
    @Suite(.serialized) struct SingleSend {
        /// A server that answers `/warm` and keeps the connection; the next request on that
        /// connection is read, counted and left unanswered (the connection closes). A request
        /// that arrives on a new connection is counted and answered 200.
        final class ClosingServer: Sendable {
            /// What the server saw, in order.
            let log = LineLog()
            var received: [String] { log.all }
            let server: FaultServer

            init() throws {
                let received = log
                server = try FaultServer.start { path in
                    guard path == "/warm" else {
                        received.append("fresh \(path)")
                        return [.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)), .closeWithFIN]
                    }
                    return [.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)),
                            .readNextRequest,
                            .run { received.append("reused") },
                            .closeWithFIN]
                }
            }

            func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(server.port)\(path)")! }
        }

        /// Given a kept-alive connection, when a request on it is met by a close, then a POST or
        /// PATCH fails with `connectionClosedBeforeAnswer` having reached the server once, and
        /// a GET (idempotent) is sent again on a fresh connection and succeeds.
        @Test(arguments: [("POST", "body"), ("POST", ""), ("PATCH", "body"), ("GET", "")])
        func aRequestMetByACloseOnAReusedConnection(method: String, body: String) async throws {
            let server = try ClosingServer()
            let warm = try await run(HTTPRequestOperation(request: URLRequest(url: server.url("/warm"))))
            try #require(warm.error == nil, "\(String(describing: warm.error))")

            var request = URLRequest(url: server.url("/act"))
            request.httpMethod = method
            if !body.isEmpty { request.httpBody = Data(body.utf8) }
            let outcome = try await run(HTTPRequestOperation(request: request))

            let received = server.received
            if method == "GET" {
                #expect(outcome.error == nil)
                #expect(received == ["reused", "fresh /act"])
            } else {
                #expect(received == ["reused"], "a \(method) reached the server \(received.count) times")
                let error = try #require(outcome.error as? TransferError, "\(String(describing: outcome.error))")
                #expect(error.code == .connectionClosedBeforeAnswer)
            }
        }

        /// A written body's closure runs once: the request is never sent again.
        @Test func aWrittenBodyIsWrittenOnce() async throws {
            let server = try ClosingServer()
            let warm = try await run(HTTPRequestOperation(request: URLRequest(url: server.url("/warm"))))
            try #require(warm.error == nil, "\(String(describing: warm.error))")
            let runs = Mutex(0)
            var request = URLRequest(url: server.url("/act"))
            request.httpMethod = "POST"
            request.httpBodyStream = StreamedRequestBody(length: 4) { writer in
                runs.withLock { $0 += 1 }
                try await writer.write(Data("data".utf8))
            }
            let outcome = try await run(HTTPRequestOperation(request: request))
            #expect((outcome.error as? TransferError)?.code == .connectionClosedBeforeAnswer)
            #expect(server.received == ["reused"])
            #expect(runs.withLock { $0 } <= 1)
        }

        /// curl's own authentication round sends a POST again after the 401 answered it: that
        /// is no resend to refuse.
        @Test func aPOSTAnsweredWithAChallengeIsSentWithTheCredential() async throws {
            var request = URLRequest(url: testServer.url(.basicAuth(user: "u", password: "p")))
            request.httpMethod = "POST"
            request.httpBody = Data("x".utf8)
            let op = HTTPRequestOperation(request: request)
            op.credential = URLCredential(user: "u", password: "p", persistence: .none)
            #expect(try await run(op).error == nil)
        }
    }
}
