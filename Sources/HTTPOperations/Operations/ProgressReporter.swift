import Dispatch
import Synchronization

/// A progress callback: bytes since the last call, bytes so far, bytes expected (-1 when
/// the total is unknown, for example for a compressed or chunked response).
public typealias TransferProgressBlock = @Sendable (_ bytes: Int64, _ totalBytes: Int64, _ totalBytesExpected: Int64) -> Void

/// Coalesces progress from the network thread into calls on the completion queue.
///
/// The network thread records every chunk (a lock and three additions); at most one call is
/// queued at a time, and it reports everything recorded until it runs. A fast transfer thus
/// costs a handful of calls, not one per chunk, and the network thread never waits for one.
///
/// Calls go through a private serial queue that targets the completion queue: they run on
/// the completion queue (its specific values are visible), never two at once, and in order,
/// even when the completion queue is concurrent.
final class ProgressReporter: Sendable {
    private struct State {
        var unreported: Int64 = 0
        var total: Int64 = 0
        var expected: Int64 = -1
        var callQueued = false
    }

    private let state = Mutex(State())
    private let block: TransferProgressBlock
    private let serialQueue: DispatchQueue

    init(block: @escaping TransferProgressBlock, queue: DispatchQueue) {
        self.block = block
        self.serialQueue = DispatchQueue(label: "HTTPOperations.progress", target: queue)
    }

    /// Records `bytes` more. Called on the network thread.
    func record(_ bytes: Int64, expected: Int64) {
        let mustQueue = state.withLock { state -> Bool in
            state.unreported += bytes
            state.total += bytes
            state.expected = expected
            defer { state.callQueued = true }
            return !state.callQueued
        }
        if mustQueue {
            serialQueue.async { self.deliver() }
        }
    }

    /// Starts again from zero, as when a transfer restarts from the first byte.
    func reset(expected: Int64) {
        state.withLock { state in
            state.unreported = 0
            state.total = 0
            state.expected = expected
        }
    }

    /// Reports what was recorded and not yet reported, after any call already queued; returns
    /// when it was reported. For the end of a transfer, before its outcome is reported.
    func flush() {
        serialQueue.sync { deliver() }
    }

    /// Runs on the serial queue.
    private func deliver() {
        let report = state.withLock { state -> (Int64, Int64, Int64)? in
            state.callQueued = false
            guard state.unreported > 0 else { return nil }
            defer { state.unreported = 0 }
            return (state.unreported, state.total, state.expected)
        }
        if let (bytes, total, expected) = report {
            block(bytes, total, expected)
        }
    }
}
