import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// Issue 15's storm: thousands of downloads started, paused, resumed and cancelled at
    /// random from several threads at once. Every operation must report exactly once, and
    /// every download that succeeds must hold exactly the resource's bytes.
    @Suite struct Storm {
        /// 10,000 in the plain build; 2,000 under a sanitizer, which runs them 5–20 times slower.
        static var operationCount: Int {
            if let count = ProcessInfo.processInfo.environment["HTTPOPERATIONS_STORM_COUNT"].flatMap(Int.init) { return count }
            #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
            return 2_000
            #else
            return 10_000
            #endif
        }

        /// What each operation was asked for, fixed by the seed before anything starts.
        struct Plan: Sendable {
            let size: Int
            let toFile: Bool
            /// The server closes the connection halfway once, so the operation resumes by itself.
            let dropsOnce: Bool
        }

        /// What the storm did, counted from the completion blocks and the hammering threads.
        struct Tally {
            var deliveries: [Int: Int] = [:]
            var succeeded = 0
            /// Range requests made by operations that succeeded, after a pause (`resumes`) and
            /// after the server's drop (`automaticResumes`): what the storm really exercised.
            var resumes = 0
            var automaticResumes = 0
            var cancelledAndFailed = 0
            var wrongBytes: [Int] = []
            var unexpectedFailures: [Int: String] = [:]
        }

        @Test(.timeLimit(.minutes(5)))
        func randomPauseResumeCancelAndStartFromFourThreads() async throws {
            let count = Self.operationCount
            var generator = SeededGenerator(for: "storm")
            let seed = generator.seed
            let plans = (0..<count).map { _ in
                Plan(size: Int.random(in: 1...48 << 10, using: &generator),
                     toFile: Bool.random(using: &generator),
                     dropsOnce: Int.random(in: 0..<5, using: &generator) == 0)
            }
            let tally = Mutex(Tally())
            let cancelled = Mutex(Set<Int>())
            let allReported = TestSignal("every storm operation to report")
            let reported = Atomic<Int>(0)
            /// The lowest index not yet reported: the storm aims at the operations from there on.
            let front = Atomic<Int>(0)
            let finished = Mutex([Bool](repeating: false, count: count))
            let files = plans.indices.map { _ in temporaryFile() }
            let operations = plans.enumerated().map { index, plan in
                var options = ResumableOptions(key: "storm-\(seed)-\(index)")
                // 8 KiB every millisecond: a pause has a body to land in.
                options.chunkSize = 8 << 10
                options.chunkDelayMilliseconds = 1
                if plan.dropsOnce { options.dropAfter = plan.size / 2 }
                let operation = HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: plan.size, options: options))))
                if plan.toFile { operation.destinationURL = files[index] }
                // The check runs where the outcome arrives, so no body outlives its check.
                let check: @Sendable (HTTPRequestOperation, (any Error)?) -> Void = { operation, error in
                    let expected = ResumableOptions.content(version: 0, count: plan.size)
                    let received = plan.toFile ? (try? Data(contentsOf: files[index])) : operation.responseData
                    removeDownload(files[index])
                    let wasCancelled = cancelled.withLock { $0.contains(index) }
                    let metrics = operation.downloadMetrics
                    let reports = tally.withLock { tally in
                        tally.deliveries[index, default: 0] += 1
                        if let error {
                            if wasCancelled, (error as? URLError)?.code == .cancelled {
                                tally.cancelledAndFailed += 1
                            } else {
                                tally.unexpectedFailures[index] = "\(error)"
                            }
                        } else if received == expected {
                            tally.succeeded += 1
                            tally.resumes += metrics.resumes
                            tally.automaticResumes += metrics.automaticResumes
                        } else {
                            tally.wrongBytes.append(index)
                        }
                        return tally.deliveries.count
                    }
                    reported.store(reports, ordering: .relaxed)
                    finished.withLock { finished in
                        finished[index] = true
                        var first = front.load(ordering: .relaxed)
                        while first < count, finished[first] { first += 1 }
                        front.store(first, ordering: .relaxed)
                    }
                    if reports == count { allReported.fire() }
                }
                operation.setCompletionBlockWithSuccess({ operation, _ in check(operation, nil) },
                                                        failure: { operation, error in check(operation, error) })
                return operation
            }

            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 32
            // Each operation is enqueued once, by whichever thread draws "start" for it first.
            let enqueued = Mutex([Bool](repeating: false, count: count))
            @Sendable func start(_ index: Int) {
                let first = enqueued.withLock { flags in
                    defer { flags[index] = true }
                    return !flags[index]
                }
                if first { queue.addOperation(operations[index]) }
            }

            // Four threads, each with its own generator from the seed: the same seed replays the
            // same script of choices (the interleaving is the scheduler's). Each action aims at
            // one of the 128 operations from the oldest one not yet reported on, so that pauses
            // land in bodies rather than in operations long finished, and a paused operation
            // stays in reach of the resumes; a thread acts every 2 ms until the
            // storm is nearly over.
            let threads = 4
            let pauses = Atomic<Int>(0), resumes = Atomic<Int>(0)
            let hammering = TestSignal("storm threads")
            for thread in 0..<threads {
                let operations = operations
                Thread.detachNewThread {
                    var generator = SeededGenerator(seed: seed &+ UInt64(thread + 1))
                    var actions = 0
                    while reported.load(ordering: .relaxed) < count - 100, actions < 20 * count {
                        actions += 1
                        let index = min(count - 1, front.load(ordering: .relaxed) + Int.random(in: 0..<128, using: &generator))
                        switch Int.random(in: 0..<100, using: &generator) {
                        case 0..<58:
                            start(index)
                        case 58..<68:
                            operations[index].pause()
                            pauses.add(1, ordering: .relaxed)
                        case 68..<98:
                            operations[index].resume()
                            resumes.add(1, ordering: .relaxed)
                        default:
                            cancelled.withLock { _ = $0.insert(index) }
                            operations[index].cancel()
                        }
                        Thread.sleep(forTimeInterval: 0.002)
                    }
                    hammering.fire()
                }
            }
            // The threads only start what lies near the front: start the rest in order.
            Thread.detachNewThread {
                for index in 0..<count {
                    while front.load(ordering: .relaxed) + 96 < index { Thread.sleep(forTimeInterval: 0.001) }
                    start(index)
                }
            }
            // Where the storm is, every 10 s: a stall shows in the log, not only as a time-out.
            let monitor = Task {
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(10))
                    let paused = operations.filter(\.isPaused).count
                    print("storm progress: \(reported.load(ordering: .relaxed)) reported, queue \(queue.operationCount), executing \(operations.filter(\.isExecuting).count), paused \(paused)")
                }
            }
            defer { monitor.cancel() }
            try await hammering.wait(times: threads, timeout: .seconds(240))
            // Whatever state the storm left them in, let them all finish.
            operations.forEach { $0.resume() }
            try await allReported.wait(timeout: .seconds(180))
            try await OutcomeRecorder().settle(operations)

            let result = tally.withLock { $0 }
            let cancelledCount = cancelled.withLock { $0.count }
            print("storm (seed \(seed)): \(count) operations, \(pauses.load(ordering: .relaxed)) pauses, "
                  + "\(resumes.load(ordering: .relaxed)) resumes, \(cancelledCount) cancelled; "
                  + "\(result.succeeded) byte-exact (after \(result.resumes) range resumes, \(result.automaticResumes) of them "
                  + "after a drop), \(result.cancelledAndFailed) ended cancelled")
            let duplicates = result.deliveries.filter { $0.value != 1 }
            #expect(result.deliveries.count == count, "operations that never reported: \(count - result.deliveries.count) (seed \(seed))")
            #expect(duplicates.isEmpty, "reported more than once: \(duplicates.keys.sorted().prefix(10)) (seed \(seed))")
            #expect(result.wrongBytes.isEmpty, "succeeded with wrong bytes: \(result.wrongBytes.prefix(10)) (seed \(seed))")
            #expect(result.unexpectedFailures.isEmpty, "failed without being cancelled: \(result.unexpectedFailures.prefix(3)) (seed \(seed))")
            #expect(result.succeeded + result.cancelledAndFailed == count)
            // A cancelled operation may still succeed (it had finished), never the other way.
            #expect(result.cancelledAndFailed <= cancelledCount)
            // The storm must have landed pauses mid-body, or it proved nothing about resuming.
            #expect(result.resumes - result.automaticResumes > 0, "no pause landed mid-body (seed \(seed))")
        }
    }
}
