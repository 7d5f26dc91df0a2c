import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    @Suite struct RedirectsAndAuthentication {
        @Test func redirectsAreFollowedByDefault() async throws {
            let op = operation(.redirect(times: 3))
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            #expect(op.responseString == "redirected")
            #expect(op.response?.url?.path == "/redirect/0")
            #expect(op.currentRequest.url?.path == "/redirect/0")
            #expect(op.request.url?.path == "/redirect/3")
        }

        @Test func tooManyRedirectsFail() async throws {
            let op = operation(.redirect(times: 5))
            op.maximumRedirects = 2
            #expect(try await run(op).urlErrorCode == .httpTooManyRedirects)
        }

        @Test func aRedirectBlockCanRewriteTheRedirect() async throws {
            let op = operation(.redirectTo("/status/500", status: 302))
            let seen = Mutex<[String]>([])
            op.setRedirectResponseBlock { _, proposed, response in
                seen.withLock { $0.append("\(response.statusCode) \(proposed.url?.path ?? "")") }
                var rewritten = proposed
                rewritten.url = testServer.url(.bytes(42))
                return rewritten
            }
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            #expect(op.responseData == TestServer.pattern(count: 42))
            #expect(seen.withLock { $0 } == ["302 /status/500"])
        }

        @Test func aRedirectBlockCanRefuseTheRedirect() async throws {
            let op = operation(.redirectTo("/bytes/10", status: 301))
            op.setRedirectResponseBlock { _, _, _ in nil }
            let outcome = try await run(op)
            let error = try #require(outcome.error as? ResponseValidationError)
            #expect(error.statusCode == 301)
            #expect(op.response?.value(forHTTPHeaderField: "Location") == "/bytes/10")
            #expect(op.responseString == "redirecting")
        }

        @Test func a303TurnsAPostIntoAGet() async throws {
            let op = operation(.redirectTo("/echo", status: 303), method: "POST", body: Data("x=1".utf8))
            let echo = try echoed(try await run(op))
            #expect(echo["method"] as? String == "GET")
            #expect(echo["bodyLength"] as? Int == 0)
        }

        @Test func a307KeepsTheMethodAndBody() async throws {
            let op = operation(.redirectTo("/echo", status: 307), method: "POST", body: Data("x=1".utf8))
            let echo = try echoed(try await run(op))
            #expect(echo["method"] as? String == "POST")
            #expect(echo["body"] as? String == "x=1")
        }

        @Test func aCredentialAuthenticatesWithBasic() async throws {
            let op = operation(.basicAuth(user: "ada", password: "s3cret"))
            op.credential = URLCredential(user: "ada", password: "s3cret", persistence: .none)
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            #expect(op.responseString?.contains(#""user":"ada""#) == true)
        }

        @Test func withoutACredentialTheChallengeIsTheResponse() async throws {
            let op = operation(.basicAuth(user: "ada", password: "s3cret"))
            let error = try #require(try await run(op).error as? ResponseValidationError)
            #expect(error.statusCode == 401)
        }

        @Test func theChallengeBlockCanAnswerWithACredential() async throws {
            let op = operation(.basicAuth(user: "ada", password: "s3cret"))
            let challenges = Mutex<[String]>([])
            op.setAuthenticationChallengeBlock { _, challenge in
                challenges.withLock { $0.append("\(challenge.authenticationMethod ?? "") \(challenge.realm ?? "") \(challenge.previousFailureCount)") }
                return URLCredential(user: "ada", password: "s3cret", persistence: .none)
            }
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            #expect(challenges.withLock { $0 } == ["Basic test server 0"])
        }

        @Test func theChallengeBlockCanGiveUp() async throws {
            let op = operation(.basicAuth(user: "ada", password: "s3cret"))
            op.setAuthenticationChallengeBlock { _, _ in nil }
            let error = try #require(try await run(op).error as? ResponseValidationError)
            #expect(error.statusCode == 401)
            #expect(op.responseString == "credentials required")
        }
    }
}
