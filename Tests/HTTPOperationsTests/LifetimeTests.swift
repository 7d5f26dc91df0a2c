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

        /// A download written by a writer queue (to a file, or to a stream) is released too:
        /// the writer's callbacks must not keep its connection, and so the operation, alive.
        @Test(arguments: [true, false])
        func aFinishedDownloadToAFileOrStreamIsReleased(toFile: Bool) async throws {
            let released = TestSignal("download released")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-\(UUID()).bin")
            defer { try? FileManager.default.removeItem(at: file) }
            do {
                let op = ObservedOperation(request: URLRequest(url: testServer.url(.bytes(2 << 20))))
                op.onDeinit = { released.fire() }
                if toFile {
                    op.destinationURL = file
                } else {
                    op.outputStream = OutputStream(toFileAtPath: file.path, append: false)
                }
                #expect(try await run(op).error == nil)
                try await waitUntilFinished(op)
            }
            try await released.wait(timeout: .seconds(5))
            #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) == 2 << 20)
        }
    }
}
