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
/// Calls go through the operation's callback queue, a serial queue that targets its
/// completion queue: they run on the completion queue (its specific values are visible),
/// never two at once, in order, and before the operation's outcome, which goes through the
/// same queue.
final class ProgressReporter: Sendable {
    private struct State {
        var unreported: Int64 = 0
        var total: Int64 = 0
        var expected: Int64 = -1
        var callQueued = false
    }

    private let state = Mutex(State())
    private let block: TransferProgressBlock
    private let callbackQueue: DispatchQueue

    /// - Parameters:
    ///   - block: The user's progress block.
    ///   - callbackQueue: The operation's serial callback queue.
    init(block: @escaping TransferProgressBlock, callbackQueue: DispatchQueue) {
        self.block = block
        self.callbackQueue = callbackQueue
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
            callbackQueue.async { self.deliverPending() }
        }
    }

    /// Sets the total so far: the bytes held when a download resumes, or 0 when a server
    /// makes it start again. Progress then restarts honestly from there.
    func reset(total: Int64, expected: Int64) {
        state.withLock { state in
            state.unreported = 0
            state.total = total
            state.expected = expected
        }
    }

    /// Reports what was recorded and not yet reported. Runs on the callback queue; the
    /// operation calls it once more before reporting its outcome.
    func deliverPending() {
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
