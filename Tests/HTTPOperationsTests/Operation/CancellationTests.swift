import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    @Suite struct Cancellation {
        @Test func cancelBeforeStartFailsWithCancelledAndNeverSucceeds() async throws {
            let op = operation(.bytes(10))
            op.cancel()
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .cancelled)
            #expect(op.isCancelled)
            try await waitUntilFinished(op)
        }

        @Test func cancelDuringTheTransferStopsIt() async throws {
            let op = operation(.delay(milliseconds: 10_000))
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            let started = TestSignal("start")
            let token = NotificationCenter.default.addObserver(forName: .networkingOperationDidStart, object: op, queue: nil) { _ in
                started.fire()
            }
            defer { NotificationCenter.default.removeObserver(token) }
            OperationQueue().addOperation(op)
            try await started.wait()
            op.cancel()
            try await recorder.done.wait(timeout: .seconds(5))
            #expect(recorder.outcome(of: op)?.urlErrorCode == .cancelled)
            try await waitUntilFinished(op, timeout: .seconds(5))
        }

        @Test func cancelMidBodyKeepsNoSuccess() async throws {
            let op = operation(.bytes(200 << 20))
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            let cancelled = Mutex(false)
            op.setDownloadProgressBlock { _, total, _ in
                guard total > 1 << 20, !cancelled.withLock({ let was = $0; $0 = true; return was }) else { return }
                op.cancel()
            }
            OperationQueue().addOperation(op)
            try await recorder.done.wait()
            try await recorder.settle([op])
            #expect(recorder.outcome(of: op)?.urlErrorCode == .cancelled)
            #expect(recorder.deliveries(of: op) == 1)
        }

        @Test func cancelAfterFinishChangesNothing() async throws {
            let op = operation(.bytes(10))
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            op.cancel()
            #expect(op.error == nil)
            #expect(!op.isCancelled)
            #expect(op.responseData?.count == 10)
        }

        @Test func manyOperationsCancelledAtRandomMomentsEachReportExactlyOnce() async throws {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 8
            let recorder = OutcomeRecorder()
            let operations = (0..<200).map { index in
                operation(index % 2 == 0 ? .bytes(50_000) : .delay(milliseconds: index % 20))
            }
            operations.forEach(recorder.watch)
            operations.forEach(queue.addOperation)
            for (index, op) in operations.enumerated() where index % 3 == 0 {
                op.cancel()
            }
            try await recorder.done.wait(times: 200, timeout: .seconds(60))
            try await recorder.settle(operations)
            for op in operations {
                #expect(recorder.deliveries(of: op) == 1)
            }
            for (index, op) in operations.enumerated() where index % 3 == 0 {
                // Cancelled before or during the transfer, or it had already finished: never
                // a success of a cancelled operation.
                if op.isCancelled {
                    #expect(recorder.outcome(of: op)?.urlErrorCode == .cancelled)
                }
            }
        }
    }
}
