import Foundation
import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    @Suite struct Smoke {
        @Test func getReturnsTheBody() async throws {
            let op = operation(.bytes(1000))
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            #expect(op.response?.statusCode == 200)
            #expect(op.responseData == TestServer.pattern(count: 1000))
        }
    }
}
