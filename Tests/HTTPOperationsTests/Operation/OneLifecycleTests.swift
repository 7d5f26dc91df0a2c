import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// An operation has one lifecycle (issue 24): its phase is derived from its transfer's
    /// machine, and the caller's pause, resume and cancel are the machine's events, taken at
    /// once in the caller's thread.
    @Suite struct OneLifecycle {
        typealias Machine = TransferStateMachine

        /// The derivation, without I/O: ready until started; then paused exactly while the
        /// machine holds a pause; executing once the machine has its outcome, until it is
        /// delivered; finished after.
        @Test func theOperationsPhaseIsItsMachines() {
            let op = URLConnectionOperation(request: URLRequest(url: URL(string: "http://example.test/")!))
            let phase = { op.state.withLock { $0.phase } }
            #expect(phase() == .ready)
            op.state.withLock { _ = $0.machine.pause() }
            #expect(phase() == .ready, "a machine paused before start leaves the operation ready")
            op.state.withLock { _ = $0.machine.resume() }
            op.changingPhase { $0.delivery = .running }
            #expect(phase() == .executing)
            op.state.withLock { #expect($0.machine.begin(held: 0) != nil) }
            #expect(phase() == .executing)
            op.state.withLock { _ = $0.machine.pause() }
            #expect(phase() == .paused)
            #expect(op.isPaused && !op.isExecuting && !op.isFinished)
            op.state.withLock { _ = $0.machine.resume() }
            #expect(phase() == .executing)
            op.state.withLock { _ = $0.machine.pause() }
            op.state.withLock { _ = $0.machine.end() }
            #expect(phase() == .paused, "an outcome during a pause leaves it paused until it is delivered")
            op.changingPhase { $0.delivery = .observersTaken }
            #expect(phase() == .paused, "its observers taken, it is still paused until delivered")
            op.changingPhase { $0.delivery = .delivered }
            #expect(phase() == .finished)
            #expect(op.isFinished && !op.isExecuting && !op.isPaused)

            let running = URLConnectionOperation(request: URLRequest(url: URL(string: "http://example.test/")!))
            running.changingPhase { state in
                state.delivery = .running
                _ = state.machine.begin(held: 0)
                _ = state.machine.end()
            }
            #expect(running.state.withLock { $0.phase } == .executing, "an outcome while executing: executing until delivered")
        }

        /// A resume whose job reaches the network thread after an outcome (the total timeout's
        /// job was queued between the pause and the resume) sends nothing: the operation
        /// times out and the server sees one request. Found by review: before the fix the
        /// resume's job started a second transfer (with `Range`) after the caller was told
        /// "timed out".
        @Test func aResumeQueuedBehindTheOutcomeSendsNothing() async throws {
            var options = ResumableOptions()
            options.chunkSize = 4 << 10
            options.chunkDelayMilliseconds = 20
            let op = HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: 2_000_000, options: options))))
            op.configuration.totalTimeout = .milliseconds(300)
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            let started = firstBytes(of: op)
            OperationQueue().addOperation(op)
            try await started.wait()
            // The network thread is held, so the pause's, the deadline's and the resume's jobs
            // queue in that order.
            let gate = DispatchSemaphore(value: 0)
            NetworkThread.shared.perform { gate.wait() }
            op.pause()
            try await Task.sleep(for: .milliseconds(400))
            op.resume()
            gate.signal()
            try await recorder.done.wait(timeout: .seconds(10))
            #expect((recorder.outcome(of: op)?.error as? URLError)?.code == .timedOut,
                    "\(String(describing: recorder.outcome(of: op)?.error))")
            try await Task.sleep(for: .milliseconds(500))
            #expect(testServer.requestCount(forResumableKey: options.key) == 1, "nothing is sent after the outcome")
        }

        /// pause() and resume() move the machine before they return; under the old design they
        /// queued a job, and the operation said "paused" while its machine still transferred.
        /// Each resume is at most one new attempt, and the bytes stay exact (SHA-256). (That a
        /// transfer left behind by a pause cannot feed the attempt after it is shown by
        /// `ResumableDownloads.pauseAndResumeManyTimesKeepTheBytesExact`: without the attempt
        /// check in `TransferDriver` it hangs.)
        @Test func pauseAndResumeAreTheMachinesEventsAtOnce() async throws {
            var options = ResumableOptions()
            options.chunkSize = 16 << 10
            options.chunkDelayMilliseconds = 5
            let size = 400_000
            let op = HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: size, options: options))))
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            let started = firstBytes(of: op)
            OperationQueue().addOperation(op)
            try await started.wait()
            var attempts: [Int] = []
            for _ in 0..<5 {
                op.pause()
                let (paused, attempt) = op.state.withLock { ($0.machine.isPaused, $0.machine.attempt.number) }
                #expect(paused, "the machine is paused when pause() returns")
                #expect(op.isPaused)
                op.resume()
                let (resumed, next) = op.state.withLock { (!$0.machine.isPaused, $0.machine.attempt.number) }
                #expect(resumed || op.state.withLock { $0.machine.isFinished })
                attempts.append(next - attempt)
                try await Task.sleep(for: .milliseconds(20))
            }
            try await recorder.done.wait(timeout: .seconds(30))
            #expect(recorder.outcome(of: op)?.error == nil)
            #expect(sha256(try #require(op.responseData)) == sha256(ResumableOptions.content(version: 0, count: size)))
            #expect(attempts.allSatisfy { $0 <= 1 }, "each resume is at most one new attempt: \(attempts)")
            #expect(op.downloadMetrics.restartsFromZero == 0)
        }

        /// Fires once, when the first body bytes of `op` arrived.
        private func firstBytes(of op: HTTPRequestOperation) -> TestSignal {
            let started = TestSignal("first bytes")
            let once = Mutex(false)
            op.setDownloadProgressBlock { _, total, _ in
                guard total > 0, once.withLock({ fired in defer { fired = true }; return !fired }) else { return }
                started.fire()
            }
            return started
        }
    }
}
