import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
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

        /// Blocks that capture their own operation (the natural way to write them) are let go
        /// when it finishes; they used to be kept for the operation's life, which they made
        /// endless.
        @Test func blocksThatCaptureTheirOperationDoNotKeepItAlive() async throws {
            let released = TestSignal("operation released")
            do {
                let op = ObservedOperation(request: URLRequest(url: testServer.url(.redirect(times: 1))))
                op.onDeinit = { released.fire() }
                op.setDownloadProgressBlock { _, _, _ in _ = op.isPaused }
                op.setUploadProgressBlock { _, _, _ in _ = op.isPaused }
                op.setRedirectResponseBlock { _, proposed, _ in op.isPaused ? nil : proposed }
                op.setAuthenticationChallengeBlock { _, _ in op.isPaused ? nil : nil }
                #expect(try await run(op).error == nil)
                try await waitUntilFinished(op)
            }
            try await released.wait(timeout: .seconds(5))
        }

        /// An operation's last reference never goes on the network thread: its `deinit` (a
        /// subclass's is user code) must not run there, nor hold up every transfer. The race
        /// this guards against (waking a worker preempted the network thread before it let go
        /// of the outcome it handed over) showed under perf at full load, not reliably here;
        /// this catches a network thread that keeps operations alive outright.
        @Test func noOperationIsDeallocatedOnTheNetworkThread() async throws {
            let count = 2000
            let released = TestSignal("operations released")
            let onNetworkThread = Mutex(0)
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 16
            for _ in 0..<count {
                let op = ObservedOperation(request: URLRequest(url: testServer.url(.bytes(20))))
                op.onDeinit = {
                    if NetworkThread.shared.isCurrentThread { onNetworkThread.withLock { $0 += 1 } }
                    released.fire()
                }
                op.setCompletionBlockWithSuccess({ _, _ in }, failure: { _, _ in })
                queue.addOperation(op)
            }
            try await released.wait(times: count, timeout: .seconds(60))
            #expect(onNetworkThread.withLock { $0 } == 0)
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
