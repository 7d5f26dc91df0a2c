import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    @Suite struct Methods {
        /// curl adds `Content-Type` and `Expect` on its own only to a body it sends, so a
        /// request without one needs no line telling it not to.
        @Test(arguments: ["GET", "DELETE", "OPTIONS", "PURGE"])
        func methodsWithoutABodySendNone(method: String) async throws {
            let echo = try echoed(try await run(operation(.echo, method: method)))
            #expect(echo["method"] as? String == method)
            #expect(echo["bodyLength"] as? Int == 0)
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["content-type"] == nil)
            #expect(headers["expect"] == nil)
        }

        /// A method that carries a body sends an empty one as `Content-Length: 0`, without the
        /// form `Content-Type` curl would give a POST.
        @Test(arguments: ["POST", "PUT", "PATCH"])
        func methodsThatCarryABodySendAnEmptyOneAsLengthZero(method: String) async throws {
            let echo = try echoed(try await run(operation(.echo, method: method)))
            #expect(echo["method"] as? String == method)
            #expect(echo["bodyLength"] as? Int == 0)
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["content-length"] == "0")
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
                    // Nothing a POST before it left behind: no type and no `Expect` the request
                    // did not ask for.
                    let headers = try #require(echo["headers"] as? [String: String])
                    #expect(headers["content-type"] == nil, "\(method)")
                    #expect(headers["expect"] == nil, "\(method)")
                }
            }
        }

        @Test func aPlainTransfersHandleIsKeptPrimedForItsPolicyAndResetForAnyOther() throws {
            let pool = EasyHandlePool()
            let first = pool.take(primedFor: .default)
            #expect(!first.primed, "a new handle has every option at its default")
            pool.recycle(first.easy, primedFor: .default)
            #expect(pool.idleCounts == (clean: 0, primed: 1))
            let second = pool.take(primedFor: .default)
            #expect(second.easy == first.easy && second.primed)
            pool.recycle(second.easy, primedFor: .default)

            // A policy that trusts its own authorities primes its handles for itself alone.
            let root = try SecurityPolicyTests.certificate(SecurityPolicyTests.certificates.root)
            let ownAuthorities = try SecurityPolicy(trustedCertificateAuthorities: [root])
            let underOwn = pool.take(primedFor: ownAuthorities)
            #expect(underOwn.easy == first.easy && !underOwn.primed, "reset before a plain transfer under another policy")
            pool.recycle(underOwn.easy, primedFor: ownAuthorities)
            let sameAgain = pool.take(primedFor: try SecurityPolicy(trustedCertificateAuthorities: [root]))
            #expect(sameAgain.easy == first.easy && sameAgain.primed, "an equal policy made apart is the same policy")
            pool.recycle(sameAgain.easy, primedFor: ownAuthorities)
            let underDefault = pool.take(primedFor: .default)
            #expect(underDefault.easy == first.easy && !underDefault.primed, "the default policy got another policy's anchors")
            pool.recycle(underDefault.easy, primedFor: .default)

            // Two handles, one primed under each policy: each policy finds its own wherever it
            // sits, and a transfer that is not plain resets the one primed longest ago.
            let underDefaultAgain = pool.take(primedFor: .default)
            let secondHandle = pool.take(primedFor: ownAuthorities)
            #expect(underDefaultAgain.easy == first.easy && underDefaultAgain.primed)
            #expect(secondHandle.easy != first.easy && !secondHandle.primed, "a new handle")
            pool.recycle(secondHandle.easy, primedFor: ownAuthorities)
            pool.recycle(underDefaultAgain.easy, primedFor: .default)
            let ownFirst = pool.take(primedFor: ownAuthorities)
            #expect(ownFirst.easy == secondHandle.easy && ownFirst.primed, "found before the last entry")
            pool.recycle(ownFirst.easy, primedFor: ownAuthorities)
            let defaultFirst = pool.take(primedFor: .default)
            #expect(defaultFirst.easy == first.easy && defaultFirst.primed, "found before the last entry")
            pool.recycle(defaultFirst.easy, primedFor: .default)
            let oldest = pool.take(primedFor: nil)
            #expect(oldest.easy == secondHandle.easy && !oldest.primed, "the handle primed longest ago is reset")
            pool.recycle(oldest.easy, primedFor: nil)
            let clean = pool.take(primedFor: nil)
            #expect(clean.easy == secondHandle.easy && !clean.primed, "a clean handle goes before a primed one is reset")
            pool.recycle(clean.easy, primedFor: nil)
            let lastPrimed = pool.take(primedFor: .default)
            #expect(lastPrimed.easy == first.easy && lastPrimed.primed)
            pool.recycle(lastPrimed.easy, primedFor: nil)
            #expect(pool.idleCounts == (clean: 2, primed: 0))
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
