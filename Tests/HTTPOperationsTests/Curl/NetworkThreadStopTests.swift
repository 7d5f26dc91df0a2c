import Foundation
@testable import HTTPOperations
import Testing

/// Stopping a network thread: only when nothing is under way, every job accepted before runs,
/// every job after is refused, and the thread ends. On threads of their own: the process's
/// shared thread serves the other tests.
extension AllTests {
    // Serialized: the first test counts this process's network threads.
    @Suite(.serialized) struct NetworkThreadStopTests {
        /// Threads of this process named like the network thread, from /proc (throws when it
        /// cannot be read: a probe that reads 0 would let a leak pass).
        static func networkThreadCount() throws -> Int {
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
            try #require(!tasks.isEmpty, "/proc/self/task lists no thread")
            return tasks.filter { task in
                let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .ascii)) ?? ""
                return name.trimmingCharacters(in: .newlines) == NetworkThread.threadName
            }.count
        }

        /// Waits, off the cooperative pool, until `thread`'s loop has returned.
        static func waitUntilEnded(_ thread: NetworkThread) async throws {
            let ended = TestSignal("the network thread to end")
            DispatchQueue.global().async {
                thread.loop.ended.wait()
                ended.fire()
            }
            try await ended.wait(timeout: .seconds(5))
        }

        @Test func anIdleThreadStopsEndsAndRefusesLaterJobs() async throws {
            let before = try Self.networkThreadCount()
            let thread = NetworkThread()
            #expect(try Self.networkThreadCount() == before + 1)
            let ran = TestSignal("a job")
            #expect(thread.perform { ran.fire() })
            try await ran.wait()

            #expect(await thread.stop())
            #expect(thread.isStopped)
            try await Self.waitUntilEnded(thread)
            // The kernel lets the task go a moment after its closure returns.
            let deadline = ContinuousClock.now + .seconds(5)
            while try Self.networkThreadCount() > before, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(try Self.networkThreadCount() == before)

            let late = TestSignal("a job after the stop")
            #expect(!thread.perform { late.fire() }, "a job after the stop is refused")
            #expect(await thread.stop(), "a second stop finds it stopped")
            #expect(late.count == 0)
        }

        @Test func aLiveConnectionHoldsTheThread() async throws {
            let thread = NetworkThread()
            thread.connectionStarted()
            #expect(await !thread.stop())
            let ran = TestSignal("a job after the refused stop")
            #expect(thread.perform { ran.fire() })
            try await ran.wait()
            thread.connectionEnded()
            #expect(await thread.stop())
            try await Self.waitUntilEnded(thread)
        }

        @Test func everyJobAcceptedBeforeTheStopRuns() async throws {
            let thread = NetworkThread()
            let gate = DispatchSemaphore(value: 0)
            let first = TestSignal("the first job")
            // The first job holds the thread while the stop and another job queue behind it.
            #expect(thread.perform {
                first.fire()
                gate.wait()
            })
            try await first.wait()
            let stopped = Task { await thread.stop() }
            // Queued after the stop was asked for (the stop's job is queued at once).
            try await Task.sleep(for: .milliseconds(50))
            let after = TestSignal("a job queued behind the stop")
            let accepted = thread.perform { after.fire() }
            gate.signal()
            let didStop = await stopped.value
            try await Self.waitUntilEnded(thread)
            // Either the job was accepted (and ran, even though the thread then stopped) or it
            // was refused (and never ran): never accepted and lost.
            #expect(didStop)
            #expect(after.count == (accepted ? 1 : 0), "accepted \(accepted)")
        }
    }
}

/// The process's own thread, stopped in a child process (an exit test): what an operation
/// started afterwards gets.
extension AllTests.NetworkThreadStopTests {
    @Test func anOperationStartedAfterTheStopFailsWithATypedError() async {
        await #expect(processExitsWith: .success) {
            let manager = HTTPRequestOperationManager()
            let report = await manager.shutdown(gracePeriod: .zero, stoppingNetworkThread: true)
            guard report.networkThreadStopped else { exit(2) }
            let later = HTTPRequestOperationManager()
            let op = later.httpRequestOperation(with: URLRequest(url: URL(string: "http://127.0.0.1:9/")!), success: nil, failure: nil)
            do {
                _ = try await later.run(op, as: Data.self)
                exit(3)
            } catch let error as TransferError where error.code == .networkThreadStopped {
                exit(0)
            } catch {
                exit(4)
            }
        }
    }
}
