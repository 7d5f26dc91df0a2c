import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    @Suite struct Methods {
        @Test(arguments: ["GET", "DELETE"])
        func methodsWithoutABodySendNone(method: String) async throws {
            let echo = try echoed(try await run(operation(.echo, method: method)))
            #expect(echo["method"] as? String == method)
            #expect(echo["bodyLength"] as? Int == 0)
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["content-type"] == nil)
            #expect(headers["expect"] == nil)
        }

        @Test(arguments: ["POST", "PUT", "PATCH", "DELETE"])
        func methodsWithABodySendItExactly(method: String) async throws {
            let body = Data(#"{"name":"ünïcødé ✓"}"#.utf8)
            let op = operation(.echo, method: method, body: body, headers: ["Content-Type": "application/json"])
            let echo = try echoed(try await run(op))
            #expect(echo["method"] as? String == method)
            #expect(echo["body"] as? String == #"{"name":"ünïcødé ✓"}"#)
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["content-length"] == "\(body.count)")
            #expect(headers["content-type"] == "application/json")
        }

        /// Easy handles go from transfer to transfer; a plain GET's handle skips the reset.
        /// Whatever ran on a handle before, each request goes out as its own.
        @Test func requestsOneAfterAnotherEachSendTheirOwnMethodAndBody() async throws {
            let sequence: [(method: String, body: Data?)] = [
                ("GET", nil), ("POST", Data("first".utf8)), ("GET", nil), ("HEAD", nil), ("GET", nil),
                ("DELETE", nil), ("GET", nil), ("PUT", Data("second".utf8)), ("GET", nil),
            ]
            for _ in 0..<2 {
                for (method, body) in sequence {
                    let outcome = try await run(operation(.echo, method: method, body: body))
                    if method == "HEAD" {
                        guard case .success = outcome else { throw EchoError(outcome: "\(outcome)") }
                        continue
                    }
                    let echo = try echoed(outcome)
                    #expect(echo["method"] as? String == method)
                    #expect(echo["bodyLength"] as? Int == body?.count ?? 0)
                }
            }
        }

        @Test func aPlainTransfersHandleIsKeptPrimedAndResetForAnyOther() {
            let pool = EasyHandlePool()
            let first = pool.take(plain: true)
            #expect(!first.primed, "a new handle has every option at its default")
            pool.recycle(first.easy, plain: true)
            #expect(pool.idleCounts == (clean: 0, primed: 1))
            let second = pool.take(plain: true)
            #expect(second.easy == first.easy && second.primed)
            pool.recycle(second.easy, plain: true)
            let forPost = pool.take(plain: false)
            #expect(forPost.easy == first.easy && !forPost.primed, "reset before a transfer that is not plain")
            pool.recycle(forPost.easy, plain: false)
            #expect(pool.idleCounts == (clean: 1, primed: 0))
            let afterPost = pool.take(plain: true)
            #expect(afterPost.easy == first.easy && !afterPost.primed)
            pool.recycle(afterPost.easy, plain: true)
        }

        @Test func postWithoutABodySendsAnEmptyOne() async throws {
            let echo = try echoed(try await run(operation(.echo, method: "POST")))
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["content-length"] == "0")
        }

        @Test func largeBodiesAreSentWithoutExpectContinue() async throws {
            let body = TestServer.pattern(count: 3 << 20)
            let echo = try echoed(try await run(operation(.echo, method: "PUT", body: body)))
            #expect(echo["bodyLength"] as? Int == body.count)
            #expect((echo["headers"] as? [String: String])?["expect"] == nil)
        }

        @Test func headReturnsHeadersAndNoBody() async throws {
            let op = operation(.bytes(5000), method: "HEAD")
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            #expect(op.response?.statusCode == 200)
            #expect(op.response?.value(forHTTPHeaderField: "Content-Length") == "5000")
            #expect(op.responseData?.isEmpty == true)
        }

        @Test func requestHeadersReachTheServer() async throws {
            let op = operation(.echo, headers: ["X-Trace": "abc", "Accept": "application/json"])
            let headers = try #require(try echoed(try await run(op))["headers"] as? [String: String])
            #expect(headers["x-trace"] == "abc")
            #expect(headers["accept"] == "application/json")
        }

        @Test func responseStringUsesTheDeclaredCharset() async throws {
            let op = operation(.text("café", charset: "iso-8859-1"))
            _ = try await run(op)
            #expect(op.responseData == Data([0x63, 0x61, 0x66, 0xE9]))
            #expect(op.responseString == "café")
        }

        @Test func statusOutsideTheAcceptableRangeFailsWithATypedError() async throws {
            let op = operation(.status(404))
            let outcome = try await run(op)
            let error = try #require(outcome.error as? ResponseValidationError)
            #expect(error.statusCode == 404)
            #expect(error.reasons == [.unacceptableStatusCode(404)])
            #expect(error.url == testServer.url(.status(404)))
            #expect(error.data != nil)
        }

        @Test func acceptableContentTypesAreEnforced() async throws {
            let op = operation(.bytes(10))
            var serializer = HTTPResponseSerializer()
            serializer.acceptableContentTypes = ["application/json"]
            op.responseSerializer = serializer
            let error = try #require(try await run(op).error as? ResponseValidationError)
            #expect(error.reasons == [.unacceptableContentType("application/octet-stream", acceptable: ["application/json"])])
        }
    }
}
