import Foundation
import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    @Suite struct TransportErrors {
        @Test func aServerThatDoesNotAnswerInTimeTimesOut() async throws {
            let op = operation(.delay(milliseconds: 5000), timeout: 1)
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .timedOut)
            #expect((outcome.error as? URLError)?.curlError?.code == 28)
        }

        @Test func aClosedPortRefusesTheConnection() async throws {
            let port = try freeLoopbackPort()
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:\(port)/")!))
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .cannotConnectToHost)
            let error = try #require(outcome.error as? URLError)
            #expect(error.curlError?.message.isEmpty == false)
            #expect(error.failingURL?.port == port)
        }

        @Test func aHostThatCannotResolveFailsAsSuch() async throws {
            // A 64-character label is not a valid DNS name, so the resolver refuses it
            // without sending a query: the test stays off the network.
            let label = String(repeating: "x", count: 64)
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://\(label).test/")!))
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .cannotFindHost)
        }

        @Test func aConnectionDroppedMidBodyIsALostConnection() async throws {
            let op = operation(.drop(total: 1_000_000, after: 300_000))
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .networkConnectionLost)
            // What did arrive is kept, and it is the right bytes.
            let data = try #require(op.responseData)
            #expect(data == TestServer.pattern(count: data.count))
        }

        @Test func aRequestWithoutAHostIsABadURL() async throws {
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http:///nohost")!))
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .badURL)
        }

        @Test func aSchemeThatIsNotAllowedIsRefused() async throws {
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "gopher+nope://127.0.0.1/")!))
            let outcome = try await run(op)
            #expect((outcome.error as? SecurityError)?.code == .schemeNotAllowed)
        }

        @Test func aSchemeAllowedButUnknownToCurlIsUnsupported() async throws {
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "gopher+nope://127.0.0.1/")!))
            op.configuration.allowedSchemes = ["http", "https", "gopher+nope"]
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .unsupportedURL)
        }
    }
}
