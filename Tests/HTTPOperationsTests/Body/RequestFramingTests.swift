import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Testing

extension AllTests {
    /// `Content-Length`, `Transfer-Encoding` and `Host` are the library's: a caller's value
    /// that disagrees with the body or the URL is refused before a byte is sent, through every
    /// door (request smuggling, RFC 9112 §11.2).
    @Suite struct RequestFramingRules {
        static let url = URL(string: "http://api.test:8080/submit")!

        @Test(arguments: [
            // (fields, body, refused)
            ([("Content-Length", "0")], "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", true),
            ([("Content-Length", "5")], "hello", false),
            ([("Content-Length", "+5")], "hello", true),
            ([("Content-Length", "4")], "hello", true),
            ([("Content-Length", "5, 5")], "hello", true),
            ([("Content-Length", "0")], "", false),
            ([("Content-Length", "3")], "", true),
            ([("Transfer-Encoding", "chunked")], "hello", true),
            ([("Transfer-Encoding", "gzip, chunked")], "", true),
            ([("Host", "api.test:8080")], "", false),
            ([("Host", "API.test:8080")], "", false),
            ([("Host", "api.test")], "", true),
            ([("Host", "other.test:8080")], "", true),
            ([("Host", "api.test:8080.evil")], "", true),
        ] as [([(String, String)], String, Bool)])
        func aCallersFramingFieldIsSentOnlyWhenItAgrees(fields: [(String, String)], body: String, refused: Bool) {
            let requestBody: RequestBody = body.isEmpty ? .none : .data(Data(body.utf8))
            let headers = fields.map { (name: $0.0, value: $0.1) }
            let threw = (try? RequestFraming.check(headers, body: requestBody, url: Self.url)) == nil
            #expect(threw == refused, "\(fields) with \(body.count) bytes")
        }

        @Test func aStreamOfUnknownLengthMayBeSentChunked() throws {
            let stream = InputStream(data: Data("x".utf8))
            try RequestFraming.check([(name: "Transfer-Encoding", value: "chunked")], body: .stream(Handover(stream), length: nil), url: Self.url)
            #expect(throws: SecurityError.self) {
                try RequestFraming.check([(name: "Transfer-Encoding", value: "chunked")], body: .stream(Handover(stream), length: 1), url: Self.url)
            }
        }

        /// A written body declares its length: a caller's `Content-Length` that says another is
        /// refused (review of issue 38: the stream's length was taken from the field itself).
        @Test func aWrittenBodysLengthAndTheCallersMustAgree() throws {
            let written = StreamedRequestBody(length: 100) { _ in }
            #expect(throws: SecurityError.self) {
                try RequestFraming.check([(name: "Content-Length", value: "5")], body: .stream(Handover(written), length: 5), url: Self.url)
            }
            try RequestFraming.check([(name: "Content-Length", value: "100")], body: .stream(Handover(written), length: 100), url: Self.url)
        }

        /// A plain stream with a short `Content-Length`: curl is never given bytes past it, so
        /// the rest cannot reach the server as a second request.
        @Test func aStreamIsNeverSentPastItsDeclaredLength() async throws {
            let seen = LineLog()
            let server = try Self.keepAliveServer(seen)
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/submit")!)
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: Data("XGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            request.setValue("1", forHTTPHeaderField: "Content-Length")
            _ = try await run(HTTPRequestOperation(request: request))
            try await Task.sleep(for: .milliseconds(200))
            #expect(seen.all == ["POST /submit"], "the server saw \(seen.all)")
        }

        /// A server that answers the first request on a connection and records it, then records
        /// a second request if one arrives on the same connection.
        static func keepAliveServer(_ seen: LineLog) throws -> FaultServer {
            try FaultServer.startWithHeads({ request in
                seen.append("\(request.method) \(request.path)")
                return [.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)), .readNextRequest,
                        .run { seen.append("a second request") }, .closeWithFIN]
            })
        }

        @Test func theDefaultPortMayBeLeftOutOfHost() {
            #expect(RequestFraming.names("example.com", authorityOf: URL(string: "https://example.com/")!))
            #expect(RequestFraming.names("example.com:443", authorityOf: URL(string: "https://example.com/")!))
            #expect(!RequestFraming.names("example.com:80", authorityOf: URL(string: "https://example.com/")!))
            #expect(RequestFraming.names("[::1]:8080", authorityOf: URL(string: "http://[::1]:8080/")!))
            #expect(!RequestFraming.names("[::1]x", authorityOf: URL(string: "http://[::1]/")!))
        }

        /// The report: `Content-Length: 0` on a POST whose body is a request; the server read
        /// `GET /smuggled` as a second request. Now nothing reaches it, through either door.
        @Test func aSmuggledRequestNeverReachesTheServer() async throws {
            let seen = LineLog()
            let server = try Self.keepAliveServer(seen)
            let smuggled = Data("GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/submit")!)
            request.httpMethod = "POST"
            request.httpBody = smuggled
            request.setValue("0", forHTTPHeaderField: "Content-Length")
            let error = try #require(try await run(HTTPRequestOperation(request: request)).error as? SecurityError)
            #expect(error.code == .framingFieldMismatch)

            var typed = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/submit")
            typed.headerFields[.contentLength] = "0"
            await #expect(throws: SecurityError.self) {
                _ = try await HTTPRequestOperationManager().perform(typed, body: .data(smuggled))
            }
            try await Task.sleep(for: .milliseconds(100))
            #expect(seen.all.isEmpty, "the server saw \(seen.all)")
        }
    }
}
