import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

/// Interleavings of a caller's `pause()` and `resume()` with the network thread, replayed at
/// the driver's seams (``DriverSeam``, debug builds) instead of left to timing, which makes
/// them rare (the storm, `Storm`, meets them by chance).
extension AllTests.PauseRaces {
    #if DEBUG
    /// Runs `action` for the first arrival at each seam, on a thread of its own as a
    /// caller would, while the network thread waits at the seam. Counts every arrival.
    final class SeamScript: Sendable {
        let arrivals = Mutex<[DriverSeam: Int]>([:])
        let actions: [DriverSeam: @Sendable () -> Void]

        init(_ actions: [DriverSeam: @Sendable () -> Void]) { self.actions = actions }

        func arrive(at seam: DriverSeam) {
            let first = arrivals.withLock { arrivals in
                arrivals[seam, default: 0] += 1
                return arrivals[seam] == 1
            }
            guard first, let action = actions[seam] else { return }
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                action()
                done.signal()
            }
            done.wait()
        }
    }

    /// The storm's failure, replayed. A pause lands as the head arrives, so the head is
    /// refused (curl: "Failure writing output to destination, passed 2 returned 0"); the
    /// caller resumes while that transfer's end is being judged. The end belongs to the
    /// attempt the pause stopped, never to the one the resume began: it was judged against
    /// the new attempt, and the operation failed with curl's write error.
    @Test func aResumeWhileAStoppedTransfersEndIsJudgedDoesNotFailTheNewAttempt() async throws {
        let size = 1_000
        let url = testServer.url(.resumable(size: size, options: ResumableOptions(key: "pause-race-\(UUID().uuidString)")))
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        let script = SeamScript([
            .headArriving: { operation.pause() },
            .completing: { operation.resume() },
        ])
        operation.driverSeam = { script.arrive(at: $0) }
        let queue = OperationQueue()
        queue.addOperation(operation)
        try await waitUntilFinished(operation)

        #expect(operation.error == nil, "\(String(describing: operation.error))")
        #expect(operation.responseData == ResumableOptions.content(version: 0, count: size))
        #expect(operation.downloadMetrics.resumes == 1)
        // The replay happened as written: the first transfer's head and end, then the
        // second transfer's.
        #expect(script.arrivals.withLock { $0 } == [.headArriving: 2, .completing: 2])
    }
    #endif
}
