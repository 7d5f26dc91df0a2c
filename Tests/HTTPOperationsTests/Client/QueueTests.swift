import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    @Suite struct Queueing {
        @Test func aThousandOperationsAtSixteenInFlightAllSucceed() async throws {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 16
            let recorder = OutcomeRecorder()
            let operations = (0..<1000).map { index in operation(.bytes(100 + index % 7)) }
            operations.forEach(recorder.watch)
            operations.forEach(queue.addOperation)
            try await recorder.done.wait(times: 1000, timeout: .seconds(60))
            #expect(recorder.all.count == 1000)
            #expect(recorder.all.allSatisfy { $0.error == nil })
            for (index, op) in operations.enumerated() {
                #expect(op.responseData == TestServer.pattern(count: 100 + index % 7))
            }
        }

        @Test func aDependentOperationStartsOnlyAfterItsDependencyFinished() async throws {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 4
            let first = operation(.delay(milliseconds: 200))
            let second = operation(.bytes(10))
            second.addDependency(first)
            let firstFinishedWhenSecondStarted = Mutex<Bool?>(nil)
            let observer = NotificationCenter.default.addObserver(
                forName: .networkingOperationDidStart, object: second, queue: nil
            ) { _ in
                firstFinishedWhenSecondStarted.withLock { $0 = first.isFinished }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            let recorder = OutcomeRecorder()
            recorder.watch(first)
            recorder.watch(second)
            [second, first].forEach(queue.addOperation)
            try await recorder.done.wait(times: 2)
            #expect(firstFinishedWhenSecondStarted.withLock { $0 } == true)
            #expect(recorder.outcome(of: second)?.error == nil)
        }

        @Test func waitUntilFinishedReturnsAfterTheCallbacks() async throws {
            let op = operation(.delay(milliseconds: 100))
            let callbackRan = Mutex(false)
            op.setCompletionBlockWithSuccess({ _, _ in callbackRan.withLock { $0 = true } }, failure: nil)
            let returned = TestSignal("waitUntilFinished to return")
            let sawCallback = Mutex(false)
            OperationQueue().addOperation(op)
            DispatchQueue.global().async {
                op.waitUntilFinished()
                sawCallback.withLock { $0 = callbackRan.withLock { $0 } }
                returned.fire()
            }
            try await returned.wait()
            #expect(op.isFinished)
            #expect(sawCallback.withLock { $0 })
        }

        @Test func callbacksRunOnTheCompletionQueueAndNeverOnTheNetworkThread() async throws {
            let key = DispatchSpecificKey<String>()
            let queue = DispatchQueue(label: "test.completion")
            queue.setSpecific(key: key, value: "mine")
            let group = DispatchGroup()
            let observations = Mutex<[String]>([])
            let op = operation(.bytes(2 << 20))
            op.completionQueue = queue
            op.completionGroup = group
            op.setDownloadProgressBlock { _, _, _ in
                let where_ = DispatchQueue.getSpecific(key: key) ?? "elsewhere"
                observations.withLock { $0.append("progress:\(where_):\(NetworkThread.shared.isCurrentThread ? "network" : "off")") }
            }
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            let lines = observations.withLock { $0 }
            #expect(!lines.isEmpty)
            #expect(lines.allSatisfy { $0 == "progress:mine:off" }, "\(lines)")
            // The group was entered while the callbacks ran and is left afterwards.
            #expect(group.wait(timeout: .now() + 10) == .success)
        }

        @Test func successAndFailureBlocksRunOnTheGivenQueue() async throws {
            let key = DispatchSpecificKey<Int>()
            let queue = DispatchQueue(label: "test.blocks", attributes: .concurrent)
            queue.setSpecific(key: key, value: 7)
            let seen = Mutex<[Int?]>([])
            let done = TestSignal("both operations")
            for endpoint in [Endpoint.bytes(10), .status(500)] {
                let op = operation(endpoint)
                op.completionQueue = queue
                op.setCompletionBlockWithSuccess({ _, _ in
                    seen.withLock { $0.append(DispatchQueue.getSpecific(key: key)) }
                    done.fire()
                }, failure: { _, _ in
                    seen.withLock { $0.append(DispatchQueue.getSpecific(key: key)) }
                    done.fire()
                })
                OperationQueue().addOperation(op)
            }
            try await done.wait(times: 2)
            #expect(seen.withLock { $0 } == [7, 7])
        }

        @Test func startAndFinishAreAnnounced() async throws {
            let op = operation(.bytes(10))
            let started = TestSignal("start notification")
            let finished = TestSignal("finish notification")
            let center = NotificationCenter.default
            let tokens = [
                center.addObserver(forName: .networkingOperationDidStart, object: op, queue: nil) { _ in started.fire() },
                center.addObserver(forName: .networkingOperationDidFinish, object: op, queue: nil) { _ in finished.fire() },
            ]
            defer { tokens.forEach(center.removeObserver) }
            _ = try await run(op)
            try await started.wait()
            try await finished.wait()
        }

        @Test func anOperationRunsWithoutAQueue() async throws {
            let op = operation(.bytes(64))
            let outcome = try await run(op, on: nil)
            #expect(outcome.error == nil)
            #expect(op.responseData?.count == 64)
        }
    }
}
