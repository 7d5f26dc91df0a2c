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
            op.state.withLock { $0.started = true }
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
            #expect(phase() == .executing, "an outcome ends a pause; executing until it is delivered")
            op.state.withLock { $0.delivered = true }
            #expect(phase() == .finished)
            #expect(op.isFinished && !op.isExecuting && !op.isPaused)
        }

        /// pause() and resume() move the machine before they return; under the old design they
        /// queued a job, and the operation said "paused" while its machine still transferred.
        /// Each resume is at most one new attempt, and the bytes stay exact (SHA-256). (That a
        /// transfer left behind by a pause cannot feed the attempt after it is shown by
        /// `ResumableDownloads.pauseAndResumeManyTimesKeepTheBytesExact`: without the attempt
        /// check in `Connection` it hangs.)
        @Test func pauseAndResumeAreTheMachinesEventsAtOnce() async throws {
            var options = ResumableOptions()
            options.chunkSize = 16 << 10
            options.chunkDelayMilliseconds = 5
            let size = 400_000
            let op = HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: size, options: options))))
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            let started = TestSignal("first bytes")
            let once = Mutex(false)
            op.setDownloadProgressBlock { _, total, _ in
                guard total > 0, once.withLock({ fired in defer { fired = true }; return !fired }) else { return }
                started.fire()
            }
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
    }
}
