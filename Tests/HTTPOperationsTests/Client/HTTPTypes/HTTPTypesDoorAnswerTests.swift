import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Synchronization
import Testing

extension AllTests {
    /// What the HTTPTypes door reports as the answer: the head that began the body, never
    /// curl's own authentication round, a failure for a body cut short whose retry was an
    /// error, never an error answer's bytes continued; and the path it was given, encoded.
    @Suite struct HTTPTypesDoorAnswers {
        typealias Machine = TransferStateMachine

        /// An empty 204 decodes as `EmptyResponse` (or an optional), as on the other doors; it
        /// was a `.decodingFailed` (JSONDecoder refuses empty data for every type).
        @Test func anEmptyNoContentDecodesAsEmptyResponse() async throws {
            let manager = HTTPRequestOperationManager()
            let delete = HTTPRequest(method: .delete, url: testServer.url(.status(204)))
            #expect(try await manager.perform(delete, decoding: EmptyResponse.self).value == EmptyResponse())
            #expect(try await manager.perform(delete, decoding: [String: Int]?.self).value == nil)
            await #expect(throws: ResponseSerializationError.self) {
                _ = try await manager.perform(delete, decoding: [String: Int].self)
            }
        }

        /// A negative `collectUpTo` is no limit below zero: it collects nothing more than 0
        /// does, and an empty body passes (it failed as larger than -1 bytes).
        @Test func aNegativeLimitIsZero() async throws {
            let manager = HTTPRequestOperationManager()
            let (response, body) = try await manager.perform(HTTPRequest(method: .get, url: testServer.url(.status(204))), collectUpTo: -1)
            #expect(response.status == .noContent && body.isEmpty)
        }

        /// A 200 cut short, whose retry is answered with a 500: before, the streamed body ended
        /// with its 40 bytes as if it were whole (the 500 was held aside, and every status is
        /// an answer there). Now the loop throws.
        @Test func aCutBodyWhoseRetryIsAnErrorFails() async throws {
            let connections = Mutex(0)
            let server = try FaultServer.start { _ -> [FaultStep] in
                let index = connections.withLock { count in defer { count += 1 }; return count }
                if index % 2 == 0 {
                    return [.send(Array(("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nETag: \"v1\"\r\n\r\n"
                                         + String(repeating: "a", count: 40)).utf8)), .closeWithFIN]
                }
                return [.send(Array("HTTP/1.1 500 Oops\r\nContent-Length: 4\r\nConnection: close\r\n\r\noops".utf8)), .closeWithFIN]
            }
            let manager = HTTPRequestOperationManager()
            await #expect(throws: (any Error).self) {
                _ = try await manager.perform(HTTPRequest(method: .get, url: server.baseURL)) { _, body in
                    var count = 0
                    for try await chunk in body { count += chunk.count }
                    return count
                }
            }
            await #expect(throws: ResumeError.self) {
                _ = try await manager.perform(HTTPRequest(method: .get, url: server.baseURL))
            }
        }

        /// With a credential, curl sends a first request without it and answers the 401 itself
        /// on the same transfer: the streamed head is the answer after it (200), not the 401.
        /// And an answer held to the end (the 401 a wrong credential gets) still reaches the
        /// streamed door with its head and body; before, the door threw "no HTTP head".
        @Test(arguments: [("secret", 200), ("wrong", 401)])
        func curlsOwnAuthenticationRoundIsNotTheAnswer(password: String, expected: Int) async throws {
            let manager = HTTPRequestOperationManager()
            manager.credential = URLCredential(user: "ada", password: password, persistence: .none)
            let url = testServer.url(.basicAuth(user: "ada", password: "secret"))
            let status = try await manager.perform(HTTPRequest(method: .get, url: url)) { response, body in
                for try await _ in body {}
                return response.status.code
            }
            #expect(status == expected)
        }

        /// After a drop, the automatic resume's 206 completes the body; the response stays the
        /// 200 that began it (before: 206, with the tail's Content-Range).
        @Test func theResponseIsTheHeadThatBeganTheBody() async throws {
            var options = ResumableOptions()
            options.dropAfter = 50_000
            let manager = HTTPRequestOperationManager()
            let (response, body) = try await manager.perform(HTTPRequest(method: .get,
                                                                         url: testServer.url(.resumable(size: 200_000, options: options))))
            #expect(body == ResumableOptions.content(version: 0, count: 200_000))
            #expect(response.status == .ok)
        }

        /// Bytes of an error answer (delivered where every status is an answer) are never
        /// continued with a Range: a resume after them starts over. Without I/O.
        @Test func anErrorAnswersBytesAreNeverContinued() {
            var configuration = Machine.Configuration()
            configuration.everyStatusIsTheBody = true
            configuration.errorAnswerJoinsBody = true
            var machine = Machine(configuration: configuration)
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(ResponseHead(statusCode: 404, httpVersion: "HTTP/1.1",
                                                      fields: [("Content-Length", "100")])) == .deliver(restartFromZero: false, newIdentity: false))
            #expect(machine.bodyReceived(count: 10, admission: { .accepted }) == .append)
            #expect(machine.pause() == .paused(stopTransfer: true))
            guard case .send(let send) = machine.resume() else { Issue.record("no send"); return }
            #expect(send.rangeFrom == nil, "no Range after an error page")
        }

        /// A path alone keeps its percent-encoding and its query through the base URL, and a
        /// path naming another origin (`//host/...`) is refused.
        @Test func aPathKeepsItsEncodingThroughTheBaseURL() async throws {
            let manager = HTTPRequestOperationManager(baseURL: testServer.url(.echo).deletingLastPathComponent())
            let relative = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo?x=a%2Fb&y=1")
            let (_, body) = try await manager.perform(relative)
            let echoed = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            #expect(echoed["path"] as? String == "/echo")
            #expect((echoed["query"] as? [String: String])?["y"] == "1", "\(echoed)")
            #expect(throws: RequestSerializationError.self) {
                _ = try manager.httpRequestOperation(for: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "//evil.test/x"))
            }
        }
    }
}
