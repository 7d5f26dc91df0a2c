import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    /// The wire's edge cases of the Swift HTTP client API's conformance scenarios, on raw
    /// replies: a status line that is not HTTP, a status outside the usual range, conflicting
    /// `Content-Length` values, chunks streamed as they come, an empty header value sent.
    @Suite struct WireEdgeCases {
        /// Raw replies, by path, written by hand so that they can be wrong on purpose.
        static let server = faultServer { path in
            if path == "/events" {
                // Ten six-byte chunks, 300 ms apart (server-sent events, NDJSON).
                return [.send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))]
                    + (0..<10).flatMap { index -> [FaultStep] in
                        [.send(Array("6\r\nevent\(index)\r\n".utf8)), .wait(.milliseconds(300))]
                    }
                    + [.send(Array("0\r\n\r\n".utf8)), .closeWithFIN]
            }
            let reply: String = switch path {
            case "/not-http":
                "Http/1.1 500 Internal Server Error\r\nContent-Length: 15\r\nConnection: close\r\n\r\nserver exploded"
            case "/status-999":
                "HTTP/1.1 999 Something New\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            case "/conflicting-length":
                "HTTP/1.1 200 OK\r\nContent-Length: 4, 10\r\nConnection: close\r\n\r\nbody"
            case "/repeated-length":
                "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 10\r\nConnection: close\r\n\r\nbody"
            case "/same-length-twice":
                "HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\nConnection: close\r\n\r\nbody"
            default:
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            }
            return [.send(Array(reply.utf8)), .closeWithFIN]
        }

        static func url(_ path: String) -> URL { server.baseURL.appendingPathComponent(String(path.dropFirst())) }

        /// `Http/1.1 500 …` is not HTTP (the HTTP-name is case-sensitive, RFC 9112 §2.3): an
        /// error on every path, with nothing of it kept. Before: a success whose object was
        /// the error page, with no response.
        @Test(arguments: ["memory", "file"])
        func aStatusLineThatIsNotHTTPIsAnError(destination: String) async throws {
            let op = HTTPRequestOperation(request: URLRequest(url: Self.url("/not-http")))
            let file = temporaryFile()
            defer { removeDownload(file) }
            if destination == "file" { op.destinationURL = file }
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .badServerResponse, "\(String(describing: outcome.error))")
            #expect(!(String(decoding: op.responseData ?? Data(), as: UTF8.self).contains("exploded")))
            #expect((try? Data(contentsOf: file))?.count ?? 0 == 0)
        }

        /// The same through the manager's async door.
        @Test func aStatusLineThatIsNotHTTPFailsTheManagersGet() async throws {
            let manager = HTTPRequestOperationManager(baseURL: Self.server.baseURL)
            manager.responseSerializer = HTTPResponseSerializer()
            await #expect(throws: URLError.self) { _ = try await manager.get("not-http", as: EmptyResponse.self) }
        }

        /// An unrecognised three-digit status reaches the caller as itself (RFC 9110 §15:
        /// the client treats it as the x00 of its class; a 9xx is no class it knows, so it is
        /// an error answer): the serializer refuses it with its status. Before: the transfer
        /// was aborted as a malformed status.
        @Test func anUnknownStatusCodeReachesTheCaller() async throws {
            let op = HTTPRequestOperation(request: URLRequest(url: Self.url("/status-999")))
            let outcome = try await run(op)
            let error = try #require(outcome.error as? ResponseValidationError, "\(String(describing: outcome.error))")
            #expect(error.statusCode == 999)
            #expect(error.data == Data("ok".utf8))
        }

        /// Differing `Content-Length` values, in one field or two, are an unrecoverable error
        /// (RFC 9112 §6.3). Before: curl read the first and the 4-byte body was a success.
        /// The same value twice is one length.
        @Test(arguments: ["/conflicting-length", "/repeated-length"])
        func conflictingContentLengthsFail(path: String) async throws {
            let outcome = try await run(HTTPRequestOperation(request: URLRequest(url: Self.url(path))))
            #expect(outcome.urlErrorCode == .badServerResponse, "\(path): \(String(describing: outcome.error))")
            let same = try await run(HTTPRequestOperation(request: URLRequest(url: Self.url("/same-length-twice"))))
            #expect(same.data == Data("body".utf8), "\(String(describing: same.error))")
        }

        /// A `ResponseBodyStream` yields bytes as they arrive: ten six-byte chunks sent 300 ms
        /// apart reach the loop as they come, each before the next is sent. Before: nothing
        /// was yielded until 256 KiB piled up or the body ended (one 60-byte chunk after 3 s).
        @Test func aStreamYieldsEachChunkAsItArrives() async throws {
            let manager = HTTPRequestOperationManager()
            let started = ContinuousClock.now
            var arrivals: [(bytes: Int, at: Duration)] = []
            var body = Data()
            for try await chunk in manager.stream(URLRequest(url: Self.url("/events"))) {
                arrivals.append((chunk.count, ContinuousClock.now - started))
                body.append(chunk)
            }
            #expect(body == Data((0..<10).map { "event\($0)" }.joined().utf8))
            // Each chunk is yielded before the next is sent (300 ms later): at least 8 of the 10
            // arrive on their own even on a loaded machine (two may coalesce in the socket).
            #expect(arrivals.count >= 8, "chunks yielded: \(arrivals.map(\.bytes))")
            let (first, last) = (try #require(arrivals.first), try #require(arrivals.last))
            #expect(first.at < last.at - .seconds(1), "the first chunk came at \(first.at), the last at \(last.at)")
        }

        /// A header field with an empty value is sent (`X-Test:`), not dropped: curl reads
        /// `X-Test: ` as "remove this header". Before: the server never saw it.
        @Test func anEmptyHeaderValueIsSent() async throws {
            var request = URLRequest(url: testServer.url(.echo))
            request.setValue("", forHTTPHeaderField: "X-Empty")
            request.setValue("kept", forHTTPHeaderField: "X-Full")
            let op = HTTPRequestOperation(request: request)
            let outcome = try await run(op)
            let echoed = try #require(try JSONSerialization.jsonObject(with: outcome.data ?? Data()) as? [String: Any])
            let headers = try #require(echoed["headers"] as? [String: String])
            #expect(headers["x-empty"] == "", "\(headers)")
            #expect(headers["x-full"] == "kept")
        }
    }
}
