/// A decision machine that an operation's loop drives (``EventStreamMachine``,
/// ``UploadMachine``): it starts once, and pauses and resumes when its phase allows.
protocol LoopMachine {
    associatedtype Action
    /// The first action; called once, when the operation starts.
    mutating func start() -> Action
    /// Holds the machine; false when there is nothing to pause.
    mutating func pause() -> Bool
    /// Lets a paused machine go on; false when it was not paused.
    mutating func resume() -> Bool
}

/// The state of an operation whose one task carries out a ``LoopMachine``'s actions, one
/// connection at a time (an event stream, a resumable upload): what its `start()`, `pause()`
/// and `resume()` change, in the lock that holds it, so that both operations make the same
/// moves. The callers announce the returned keys, close the returned connection and wake the
/// loop once the lock is released.
protocol MachineLoopState {
    associatedtype Machine: LoopMachine
    var phase: OperationPhase { get set }
    var machine: Machine { get set }
    /// The connection under way, which a pause closes.
    var connection: HTTPRequestOperation? { get }
}

/// What `start()` found.
enum LoopStart<Action> {
    /// Run the loop from `Action`, after announcing the keys.
    case run(Action, [String])
    /// The operation was paused: `start()` resumes it.
    case resume
    /// Already running or finished.
    case ignore
}

extension MachineLoopState {
    /// Starts the machine in the same lock as the phase: a pause right after `start()` finds
    /// it started, and two `start()` calls cannot both run.
    mutating func begin() -> LoopStart<Machine.Action> {
        switch phase {
        case .ready:
            let keys = phase.move(to: .executing)
            return .run(machine.start(), keys)
        case .paused: return .resume
        case .executing, .finished: return .ignore
        }
    }

    /// Pauses the machine: the connection to close and the keys to announce, or nil.
    mutating func pauseLoop() -> (connection: HTTPRequestOperation?, keys: [String])? {
        guard machine.pause() else { return nil }
        return (connection, phase.move(to: .paused))
    }

    /// Resumes a paused machine: the keys to announce, or nil.
    mutating func resumeLoop() -> [String]? {
        guard machine.resume() else { return nil }
        return phase.move(to: .executing)
    }
}

extension Operation {
    /// Completes a pause or a resume outside the lock: announces `keys` (nothing when the move
    /// was refused, `keys` nil), closes `connection` and wakes the loop.
    func completeLoopMove(_ keys: [String]?, closing connection: HTTPRequestOperation? = nil, waking wakeup: Wakeup) {
        guard let keys else { return }
        announce(phaseKeys: keys)
        connection?.cancel()
        wakeup.wake()
    }
}
