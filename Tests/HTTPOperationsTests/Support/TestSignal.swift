import Synchronization

/// Something a test waits for, with a timeout, without sleeping and hoping.
final class TestSignal: Sendable {
    struct TimedOut: Error, CustomStringConvertible {
        let what: String
        var description: String { "timed out waiting for \(what)" }
    }

    private struct State {
        var count = 0
        var waiters: [(id: Int, needed: Int, continuation: CheckedContinuation<Bool, Never>)] = []
        var nextID = 0
    }

    private let state = Mutex(State())
    private let name: String

    init(_ name: String) {
        self.name = name
    }

    /// Records one occurrence.
    func fire() {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.count += 1
            let count = state.count
            let ready = state.waiters.filter { $0.needed <= count }
            state.waiters.removeAll { $0.needed <= count }
            return ready.map(\.continuation)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// How many times it fired so far.
    var count: Int { state.withLock { $0.count } }

    /// Waits until it fired `times` times in all.
    ///
    /// - Throws: ``TimedOut`` after `timeout`.
    func wait(times: Int = 1, timeout: Duration = .seconds(20)) async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let fired = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.count >= times { return true }
                state.waiters.append((id, times, continuation))
                return false
            }
            if resumeNow {
                continuation.resume(returning: true)
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index).continuation
                }
                expired?.resume(returning: false)
            }
        }
        if !fired { throw TimedOut(what: name) }
    }
}
