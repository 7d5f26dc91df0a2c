import Foundation
import HTTPOperations
import Synchronization
import Testing

/// Chains of dependent operations of any length run and are released (issue 24). Foundation's
/// `Operation` holds its dependencies strongly, so releasing the last of a chain released the
/// rest recursively, one stack frame group per link: the process died of a stack overflow.
/// Each test runs in a child process (an exit test), so a crash fails it instead of ending
/// the run, and releases the chain on a thread with the main thread's 8 MiB of stack, so the
/// figure does not depend on where the test body happens to run.
extension AllTests {
    @Suite struct DependencyChainTests {
        /// Runs `body` on a new thread with `stackSize` bytes of stack and waits for it.
        static func onThread(stackSize: Int = 8 << 20, _ body: @escaping @Sendable () -> Void) {
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                body()
                done.signal()
            }
            thread.stackSize = stackSize
            thread.start()
            done.wait()
        }

        /// Ends the child process: 0 when `passed`, 1 otherwise (the message on stderr).
        static func finish(passed: Bool, _ message: @autoclosure () -> String = "") -> Never {
            if !passed { FileHandle.standardError.write(Data("\(message())\n".utf8)) }
            exit(passed ? 0 : 1)
        }

        /// What the manager test's callbacks and threads share: a static, not a capture, since
        /// an operation's blocks must not hold the array that holds the operations. 50,000:
        /// before the fix, a chain of cancelled operations was still released at 20,000 and
        /// died at 40,000.
        static let run = Run(count: 50_000)

        final class Run: Sendable {
            let count: Int
            let finished = DispatchSemaphore(value: 0)
            let cancelled = Mutex(0)
            /// The chain, held here until it is released on a thread of known stack.
            let chain = Mutex<[HTTPRequestOperation]>([])

            init(count: Int) { self.count = count }

            func recordCancelled() {
                let all = cancelled.withLock { counted -> Bool in
                    counted += 1
                    return counted == count
                }
                if all { finished.signal() }
            }
        }

        @Test func aChainOf100000OperationsThatNeverStartedIsReleased() async {
            await #expect(processExitsWith: .success) {
                DependencyChainTests.onThread {
                    var chain: [HTTPRequestOperation] = []
                    chain.reserveCapacity(100_000)
                    for _ in 0..<100_000 {
                        let next = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
                        if let previous = chain.last { next.addDependency(previous) }
                        chain.append(next)
                    }
                    // The array releases the first operation first (its dependent still holds
                    // it) and the last one last, which held the whole chain.
                    chain = []
                }
                DependencyChainTests.finish(passed: true)
            }
        }

        @Test func aChainOf50000CancelledOperationsRunsThroughAManagerAndIsReleased() async {
            await #expect(processExitsWith: .success) {
                let run = DependencyChainTests.run
                do {
                    let manager = HTTPRequestOperationManager()
                    manager.operationQueue.maxConcurrentOperationCount = 16
                    for _ in 0..<run.count {
                        let next = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
                        next.setCompletionBlockWithSuccess(nil) { _, error in
                            if (error as? URLError)?.code == .cancelled { DependencyChainTests.run.recordCancelled() }
                        }
                        run.chain.withLock { chain in
                            if let previous = chain.last { next.addDependency(previous) }
                            chain.append(next)
                        }
                        next.cancel()
                        manager.enqueue(next)
                    }
                    guard run.finished.wait(timeout: .now() + 120) == .success else {
                        DependencyChainTests.finish(passed: false, "only \(run.cancelled.withLock { $0 }) of \(run.count) finished cancelled")
                    }
                }
                DependencyChainTests.onThread {
                    // Finished as Foundation sees it (the failure block runs just before).
                    for operation in run.chain.withLock({ $0 }) { operation.waitUntilFinished() }
                    run.chain.withLock { $0 = [] }
                }
                DependencyChainTests.finish(passed: true)
            }
        }
    }
}
