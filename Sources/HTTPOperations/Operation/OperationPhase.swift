/// Where an operation is in its life.
///
/// `paused` is neither executing nor finished. An `OperationQueue` keeps counting a paused
/// operation against `maxConcurrentOperationCount`, as it did in AFNetworking 2.0: the
/// queue started it and it has not finished.
enum OperationPhase: Sendable, Equatable {
    /// Not started yet.
    case ready
    /// Started; its transfer is in progress.
    case executing
    /// Started, then paused: the transfer is held, the bytes received so far are kept.
    case paused
    /// Done, successfully or not. Final.
    case finished

    /// Whether an operation may move from `self` to `next`. An operation's phase is derived
    /// from its transfer's state (it is paused exactly while its transfer holds a pause), and
    /// every change of it is checked against this in debug builds.
    func canTransition(to next: OperationPhase) -> Bool {
        switch (self, next) {
        case (.ready, .executing), (.ready, .finished): true
        case (.executing, .paused), (.executing, .finished): true
        case (.paused, .executing), (.paused, .finished): true
        case (.ready, _), (.executing, _), (.paused, _), (.finished, _): false
        }
    }

    /// The Foundation key-value names whose values change when moving from `self` to `next`;
    /// `OperationQueue` and `waitUntilFinished()` listen for exactly these.
    func changedKeys(to next: OperationPhase) -> [String] {
        // Constant arrays: a transition allocates nothing (two per operation, on every request).
        switch ((self == .executing) != (next == .executing), (self == .finished) != (next == .finished)) {
        case (true, true): Self.executingAndFinishedKeys
        case (true, false): Self.executingKeys
        case (false, true): Self.finishedKeys
        case (false, false): []
        }
    }

    private static let executingKeys = ["isExecuting"]
    private static let finishedKeys = ["isFinished"]
    private static let executingAndFinishedKeys = ["isExecuting", "isFinished"]
}

extension OperationPhase {
    /// Moves to `next` when that is allowed, in the lock that changed what the phase follows;
    /// returns the keys to announce (``Foundation/Operation/announce(phaseKeys:)``) once the
    /// lock is released.
    mutating func move(to next: OperationPhase) -> [String] {
        guard self != next, canTransition(to: next) else { return [] }
        defer { self = next }
        return changedKeys(to: next)
    }
}

extension Operation {
    /// Announces `keys` (``OperationPhase/changedKeys(to:)``) to Foundation's key-value
    /// observers, `OperationQueue` and `waitUntilFinished()`; outside any lock.
    func announce(phaseKeys keys: [String]) {
        for key in keys {
            willChangeValue(forKey: key)
            didChangeValue(forKey: key)
        }
    }
}
