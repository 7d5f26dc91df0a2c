import Foundation
import HTTPOperations
import Synchronization

/// Where each open-loop request's time went, for `BENCH_LATENCY_LOG`: when the driver issued
/// it (a place was free), when its operation started (the manager's queue ran it), and how
/// long curl's transfer took to send the request, to see the first byte and to end
/// (``TransferTimings``). Kept only when the log is asked for.
///
/// Holds its mutable state in one struct behind one `Mutex`.
final class LatencyStamps: Sendable {
    private struct State {
        /// CLOCK_MONOTONIC nanoseconds; 0 until stamped.
        var issued: [UInt64]
        var started: [UInt64]
        /// Seconds, curl's `requestSent`, `firstByte` and `total` (TransferTimings); -1 until stamped.
        var curl: [(sent: Double, firstByte: Double, total: Double)]
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(issued: [UInt64](repeating: 0, count: count), started: [UInt64](repeating: 0, count: count),
                            curl: Array(repeating: (-1, -1, -1), count: count)))
    }

    func issued(_ index: Int) {
        let now = LatencyRecorder.now()
        state.withLock { $0.issued[index] = now }
    }

    func answered(_ index: Int, operation: StampedOperation, due: UInt64) {
        let started = operation.startedAt.load(ordering: .acquiring)
        let seconds = { (duration: Duration) in
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        let curl = operation.timings.map { timings in
            let transfer = timings.lastTransfer
            return (seconds(transfer.requestSent), seconds(transfer.firstByte), seconds(transfer.total))
        } ?? (-1, -1, -1)
        state.withLock {
            $0.started[index] = started
            $0.curl[index] = curl
        }
    }

    /// "issued started sent first-byte total": the first two in seconds from `due`, the rest
    /// curl's, from its transfer's start.
    func line(_ index: Int, due: UInt64) -> String {
        state.withLock { state in
            let since = { (time: UInt64) in time == 0 ? -1 : Double(Int64(bitPattern: time &- due)) / 1e9 }
            let curl = state.curl[index]
            return "\(since(state.issued[index])) \(since(state.started[index])) \(curl.sent) \(curl.firstByte) \(curl.total)"
        }
    }
}

/// An operation that notes when the manager's queue started it (users subclass operations
/// so too).
final class StampedOperation: HTTPRequestOperation, @unchecked Sendable {
    // @unchecked Sendable: as its superclass; the one field added is atomic.
    let startedAt = Atomic<UInt64>(0)

    override func start() {
        startedAt.store(LatencyRecorder.now(), ordering: .releasing)
        super.start()
    }
}
