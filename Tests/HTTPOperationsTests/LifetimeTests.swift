import Foundation
import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    /// Nothing the library holds outlives an operation's finish: a server runs for months.
    @Suite struct Lifetime {
        /// Tells when it is deallocated.
        final class ObservedOperation: HTTPRequestOperation, @unchecked Sendable {
            var onDeinit: (@Sendable () -> Void)?
            deinit { onDeinit?() }
        }

        @Test(arguments: [Endpoint.bytes(100_000), .status(404), .redirect(times: 2), .drop(total: 10_000, after: 100)])
        func aFinishedOperationIsReleased(endpoint: Endpoint) async throws {
            let released = TestSignal("operation released")
            do {
                let op = ObservedOperation(request: URLRequest(url: testServer.url(endpoint)))
                op.onDeinit = { released.fire() }
                op.setDownloadProgressBlock { _, _, _ in }
                _ = try await run(op)
                try await waitUntilFinished(op)
            }
            try await released.wait(timeout: .seconds(5))
        }
    }
}
