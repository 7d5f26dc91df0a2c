import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// Pause, resume and cancel in any order, any number of times, from any thread.
    @Suite struct PauseRaces {
        @Test func pauseResumeAndCancelFromManyThreadsNeitherStallNorSplice() async throws {
            let size = 600_000
            let count = 24
            var options = ResumableOptions()
            options.chunkSize = 16 << 10
            options.chunkDelayMilliseconds = 1
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 8
            let recorder = OutcomeRecorder()
            let operations = (0..<count).map { _ in
                HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: size, options: options))))
            }
            operations.forEach(recorder.watch)
            operations.forEach(queue.addOperation)

            // Four threads hammer the operations with pauses and resumes, some while they
            // start; every fourth operation is also cancelled, some while paused.
            let hammering = TestSignal("hammering threads")
            let seed = SeededGenerator(for: "pauseResumeAndCancelFromManyThreads").seed
            for thread in 0..<4 {
                DispatchQueue.global().async {
                    var generator = SeededGenerator(seed: seed &+ UInt64(thread))
                    for step in 0..<400 {
                        let op = operations[Int(generator.next() % UInt64(count))]
                        switch (step + thread) % 3 {
                        case 0: op.pause()
                        case 1: op.resume()
                        default: if operations.firstIndex(of: op)! % 4 == 0, step % 50 == 0 { op.cancel() } else { op.resume() }
                        }
                    }
                    hammering.fire()
                }
            }
            try await hammering.wait(times: 4)
            // Whatever state they were left in, let them all finish.
            operations.forEach { $0.resume() }
            try await recorder.done.wait(times: count, timeout: .seconds(60))
            try await recorder.settle(operations)
            for op in operations {
                #expect(recorder.deliveries(of: op) == 1, "each operation reports exactly once (seed \(seed))")
            }

            let expected = sha256(ResumableOptions.content(version: 0, count: size))
            for op in operations {
                switch recorder.outcome(of: op) {
                case .success?:
                    #expect(sha256(try #require(op.responseData)) == expected, "no byte lost or duplicated")
                case .failure(let error)?:
                    #expect((error as? URLError)?.code == .cancelled, "only cancellation may fail them: \(error)")
                case nil:
                    Issue.record("no outcome")
                }
            }
            // The network thread is still responsive.
            #expect(try await run(operation(.bytes(10)), timeout: .seconds(5)).error == nil)
        }
    }
}
