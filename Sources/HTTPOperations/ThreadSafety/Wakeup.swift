import Dispatch
import Synchronization

/// Where one task waits for a delay to pass or for another thread to wake it, whichever comes
/// first, without a thread blocked or a loop polling (the delay is a Dispatch timer). A wake
/// while nobody waits is kept, once, for the next wait: a pause or cancel that lands between
/// two waits is never lost.
///
/// Thread-safety: everything lives in one struct behind one Mutex; the continuation is
/// resumed outside it.
final class Wakeup: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        /// Counts waits, so that a timer left from an earlier one wakes nobody.
        var wait = 0
        var pendingWake = false
    }

    private let state = Mutex(State())

    /// Returns after `delay` (nil: never by itself) or once ``wake()`` is called.
    func wait(upTo delay: Duration?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { state -> Int? in
                if state.pendingWake {
                    state.pendingWake = false
                    return nil
                }
                state.wait += 1
                state.waiter = continuation
                return state.wait
            }
            guard let wait else { return continuation.resume() }
            guard let delay else { return }
            let (seconds, attoseconds) = delay.components
            let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            let total = nanoseconds.overflow ? Int64.max : nanoseconds.partialValue &+ attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: max(0, total)))) { [self] in
                wake(only: wait)
            }
        }
    }

    /// Waits `delay`, or less when a wake finds `interrupted()` true (a pause, a resume or a
    /// cancel came); a wake that changed nothing (one left from before the wait) does not cut
    /// it short.
    func sleep(for delay: Duration, unless interrupted: () -> Bool) async {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: delay)
        while true {
            await wait(upTo: clock.now.duration(to: deadline))
            if interrupted() || clock.now >= deadline { return }
        }
    }

    /// Wakes the waiting task, or the next one to wait.
    func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pendingWake = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// The timer of wait number `wait` fired: wakes that wait if it still waits.
    private func wake(only wait: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.wait == wait, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
