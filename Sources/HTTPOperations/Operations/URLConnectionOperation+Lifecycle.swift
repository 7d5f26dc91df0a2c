import CoreMetrics
import Foundation
import Logging

/// Start, cancel, pause, resume and the outcome: the operation's phase (``OperationPhase``)
/// and what Foundation is told of it.
extension URLConnectionOperation {
    /// Whether the operation is paused: started, holding its transfer, not finished.
    public var isPaused: Bool { state.withLock { $0.phase == .paused } }

    /// The body of `start()`.
    func startTransfer() {
        guard transition(from: .ready, to: .executing) else {
            if isPaused { resume() }
            return
        }
        do {
            if let prepared = try prepareRequest() {
                state.withLock { $0.currentRequest = prepared }
            }
        } catch {
            NotificationCenter.default.post(name: .networkingOperationDidStart, object: self)
            conclude(response: nil, data: nil, error: error)
            return
        }
        // After prepareRequest(), so observers see the request that is sent.
        NotificationCenter.default.post(name: .networkingOperationDidStart, object: self)
        // The settings and the request only: copying the whole state retains every field.
        var (settings, request, cancelledBefore) = state.withLock { ($0.settings, $0.currentRequest, $0.cancelRequested) }
        if cancelledBefore {
            // Cancelled before it started: nothing is opened or sent.
            conclude(response: nil, data: nil, error: cancellationError())
            return
        }
        startSpan(settings: settings, request: &request)
        // Built outside the lock: it works out the first transfer and opens the body's file.
        let connection = Connection(operation: self, settings: consume settings, request: request)
        state.withLock { $0.connection = connection }
        connection.logger.debug("request started")
        let queued = NetworkThread.shared.perform {
            // Read here, on the network thread, not when the connection was stored: a pause
            // or resume made since then queued its own job ahead of this one, against a
            // machine that had not begun, and only the phase as it is now says what the
            // caller last asked (a snapshot paused for good an operation resumed in between).
            // A pause that came while the connection was being made is not lost; one that a
            // resume undid pauses nothing (the operation is executing): its completions run.
            let (paused, cancelled, pauseCompletions) = self.state.withLock { state in
                defer { state.pendingPauseCompletions.removeAll() }
                return (state.phase == .paused, state.cancelRequested, state.pendingPauseCompletions)
            }
            if paused {
                connection.pause(whenPaused: pauseCompletions)
            } else {
                connection.callBack(pauseCompletions)
            }
            if cancelled { connection.cancel() }
            connection.begin()
        }
        if !queued {
            // The network thread was stopped (HTTPRequestOperationManager.shutdown): nothing
            // was sent, and nothing will be.
            NetworkThread.shared.connectionEnded()
            conclude(response: nil, data: nil, error: TransferError(.networkThreadStopped, url: request.url,
                                                                    detail: "The network thread was stopped; nothing was sent"))
        }
    }

    /// Finishes an operation that was never started with `error`, without sending anything
    /// (a manager that is shutting down refuses it). Does nothing once it has started.
    func refuse(_ error: any Error) {
        guard transition(from: .ready, to: .executing) else { return }
        conclude(response: nil, data: nil, error: error)
    }

    /// The body of `cancel()`.
    func cancelTransfer() {
        // Decided under the lock that start() uses, so a cancel racing with start() is seen
        // by exactly one of them.
        let decision = state.withLock { state -> (effective: Bool, connection: Connection?) in
            guard !state.outcomeDecided, !state.cancelRequested else { return (false, nil) }
            state.cancelRequested = true
            return (true, state.connection)
        }
        guard decision.effective else { return }
        super.cancel()
        // Not started: start() will finish it. Started: stop the transfer where it is.
        if let connection = decision.connection {
            NetworkThread.shared.perform { connection.cancel() }
        }
    }

    /// Pauses the transfer: it is taken off the network (its connection closes), the bytes
    /// received so far are kept, and the operation is neither executing nor finished until
    /// ``resume()``. For a download to ``destinationURL`` the ``resumeData`` is also saved
    /// beside the file. Does nothing unless the operation is executing and not cancelled.
    ///
    /// - Parameter completion: Runs exactly once, on the completion queue: once the pause has
    ///   taken effect and the resume data is saved (for example before a process exits), or
    ///   straight away when there was nothing to pause. Read ``isPaused`` to know which.
    public func pause(completion: (@Sendable () -> Void)? = nil) {
        enum Next { case pause(Connection), waitForConnection, answerNow }
        let next = transition(from: .executing, to: .paused, when: { !$0.cancelRequested && !$0.outcomeDecided }) { state in
            if let connection = state.connection { return Next.pause(connection) }
            // Before the connection exists (prepareRequest() is running): start() passes it on.
            if let completion { state.pendingPauseCompletions.append(completion) }
            return Next.waitForConnection
        } ?? .answerNow
        switch next {
        case .pause(let connection):
            NetworkThread.shared.perform { connection.pause(whenPaused: completion.map { [$0] } ?? []) }
        case .waitForConnection:
            break
        case .answerNow:
            guard let completion else { return }
            let (queue, group) = state.withLock { ($0.settings.completionQueue ?? .global(), $0.settings.completionGroup) }
            queue.async(group: group, execute: completion)
        }
    }

    /// Resumes a paused transfer: the request is sent again with `Range` for the bytes after
    /// those held and `If-Range` naming their version, and the answer decides (see
    /// Docs/ResumableDownloads.md). A request whose method is not idempotent (POST, PATCH) is
    /// never sent twice: resuming one that was sent fails the operation with
    /// ``TransferError`` `.requestNotResendable`. Does nothing unless the operation is paused
    /// and not cancelled.
    public func resume() {
        let connection = transition(from: .paused, to: .executing, when: { !$0.cancelRequested && !$0.outcomeDecided }) {
            $0.connection
        }
        // No connection yet: start() sees the operation executing and does not pause it.
        if let connection = connection ?? nil {
            NetworkThread.shared.perform { connection.resume() }
        }
    }

    /// The network thread found the outcome given before a pause reached it: the operation,
    /// paused a moment ago, is executing again until its outcome is reported (so that
    /// ``isPaused`` is false when the pause's completion runs).
    func pauseDidNotTakeEffect() {
        transition(from: .paused, to: .executing)
    }

    /// Runs `observer` once the operation's outcome is known: after ``processResponse()`` (and
    /// so after the success or failure block), before the operation is marked finished, on
    /// the completion queue. Operations that depend on this one start after it. Added after
    /// the outcome is known, it runs at once.
    func whenOutcomeKnown(_ observer: @escaping @Sendable (URLConnectionOperation) -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.outcomeObserversTaken else { return true }
            state.outcomeObservers.append(observer)
            return false
        }
        if runNow { observer(self) }
    }

    // MARK: - Completion

    /// Records the outcome of the transfer and finishes the operation on its callback queue:
    /// the last progress, processResponse(), then the finished state, then the notification.
    ///
    /// - Parameters:
    ///   - complete: Whether the resource is complete, so its resume data is done with; nil
    ///     means "when there is no error".
    ///   - timings, retries, resumes: What the transfers measured, for the timings, the
    ///     metrics and the span.
    ///   - callbackQueue: The queue the operation's other callbacks went through (serial when
    ///     there were progress callbacks), so the outcome comes after all of them; nil means
    ///     the completion queue.
    ///   - completion: A last check of a successful transfer (integrity), run on the callback
    ///     queue before processResponse(); an error it returns fails the operation, unless it
    ///     was cancelled meanwhile.
    ///   - handoff: On the network thread, the hand-off that batches the outcomes of one pass
    ///     into one wake-up; nil dispatches now.
    func conclude(response: URLResponse?, data: Data?, error: (any Error)?, complete: Bool? = nil,
                  timings: TransferTimings? = nil,
                  retries: Int = 0, resumes: Int = 0,
                  log: (Logger, Logger.Metadata)? = nil, on callbackQueue: DispatchQueue? = nil, progress: [ProgressReporter] = [],
                  completion: (@Sendable (Data?) -> (any Error)?)? = nil,
                  handoff: CallbackHandoff? = nil) {
        let (completionQueue, group, pauseCompletions) = state.withLock { state in
            state.outcomeDecided = true
            state.connection = nil
            if let response {
                state.response = response
                state.responseHead = nil
            }
            state.responseData = data
            state.timings = timings
            // Complete: there is nothing left to resume (in this lock, not one more).
            if complete ?? (error == nil) { state.resumeData = nil }
            // A cancel that won the lock before this point turns any outcome into a
            // cancellation: a cancelled operation never reports success.
            state.error = state.cancelRequested ? cancellationError() : error
            // The blocks are done with: a block that captures its operation must not keep it
            // alive (they run on the callback queue, whose reporters hold their own copies).
            state.settings.uploadProgress = nil
            state.settings.downloadProgress = nil
            state.settings.redirectBlock = nil
            state.settings.challengeBlock = nil
            state.settings.serverTrustEvaluation = nil
            defer { state.pendingPauseCompletions.removeAll() }
            return (state.settings.completionQueue, state.settings.completionGroup, state.pendingPauseCompletions)
        }
        let queue = callbackQueue ?? completionQueue ?? .global()
        // Pauses asked for before a connection existed, and now moot.
        for completion in pauseCompletions { queue.async(group: group, execute: completion) }
        let deliver: @Sendable () -> Void = {
            for reporter in progress { reporter.deliverPending() }
            if let failure = completion?(data) {
                // Integrity is checked only for a success; a cancellation stays a cancellation.
                self.state.withLock { state in
                    if !state.cancelRequested { state.error = failure }
                }
            }
            self.processResponse()
            let (observers, observation) = self.state.withLock { state in
                state.outcomeObserversTaken = true
                defer {
                    state.outcomeObservers.removeAll()
                    state.observation.span = nil
                }
                return (state.outcomeObservers, state.observation)
            }
            // Before the observers: whoever awaits the outcome finds it measured.
            self.reportOutcome(observation, timings: timings, retries: retries, resumes: resumes)
            for observer in observers { observer(self) }
            self.transition(to: .finished)
            if let (logger, metadata) = log {
                var metadata = metadata
                if let error = self.error { metadata[RequestLogging.errorKey] = "\(error)" }
                logger.debug("request finished", metadata: metadata)
                if let timings { logger.trace("timings", metadata: ["httpop.timings": "\(timings)"]) }
            }
            NotificationCenter.default.post(name: .networkingOperationDidFinish, object: self,
                                            userInfo: timings.map { [Notification.transferTimingsKey: $0] })
        }
        if let handoff {
            // Consumed: the network thread must not hold the last reference to this operation.
            handoff.deliver(on: queue, group: group, consume deliver)
        } else {
            queue.async(group: group, execute: deliver)
        }
    }

    /// A serial queue for one operation's callbacks, running them on `completionQueue` (a
    /// global concurrent queue when nil): in order, never two at once.
    static func makeCallbackQueue(targeting completionQueue: DispatchQueue?) -> DispatchQueue {
        DispatchQueue(label: "HTTPOperations.callbacks", target: completionQueue ?? .global())
    }

    func cancellationError() -> URLError {
        URLError(.cancelled, url: request.url, description: "The operation was cancelled.")
    }

    // MARK: - Transitions

    /// Moves to `next` if the phase machine allows it, and tells Foundation.
    @discardableResult
    func transition(from expected: OperationPhase? = nil, to next: OperationPhase) -> Bool {
        transition(from: expected, to: next, when: { _ in true }) { _ in () } != nil
    }

    /// Moves from `expected` (any phase when nil) to `next` when ``OperationPhase`` and
    /// `condition` allow it, runs `update` under the same lock, then tells Foundation.
    ///
    /// Foundation reads `isFinished` and `isExecuting` while it reacts to an announcement, so
    /// announcements are made outside the lock. To keep them in the order of the transitions,
    /// the thread that finds nobody announcing announces its own keys and then whatever other
    /// transitions queued meanwhile; a transition that finds somebody announcing queues its
    /// keys for them. (The common case queues nothing and allocates nothing.)
    ///
    /// - Returns: What `update` returned, or nil when the transition was refused.
    func transition<Result>(from expected: OperationPhase?, to next: OperationPhase,
                            when condition: (inout State) -> Bool,
                            update: (inout State) -> Result) -> Result? {
        let outcome = state.withLock { state -> (result: Result, announceNow: [String]?, inFlight: (Meter, up: Bool)?)? in
            guard expected == nil || state.phase == expected, state.phase.canTransition(to: next), condition(&state) else {
                return nil
            }
            let keys = state.phase.changedKeys(to: next)
            let inFlight = inFlightChange(from: state.phase, to: next, &state.observation, settings: state.settings)
            state.phase = next
            let result = update(&state)
            guard !state.announcing else {
                state.unannounced.append(contentsOf: keys)
                return (result, nil, inFlight)
            }
            state.announcing = true
            return (result, keys, inFlight)
        }
        guard let outcome else { return nil }
        // The meter is a metrics backend's: called outside the lock.
        // (A meter ignores a negative increment: down is `decrement`.)
        if let (meter, up) = outcome.inFlight {
            if up { meter.increment() } else { meter.decrement() }
        }
        if let keys = outcome.announceNow {
            announce(keys)
            announceQueuedTransitions()
        }
        return outcome.result
    }

    /// How the in-flight meter moves from `phase` to `next`: up when the operation starts
    /// executing, down when it stops (paused or finished), on the instruments fixed when it
    /// left `ready` — so every increment has its decrement, whatever is set meanwhile.
    private func inFlightChange(from phase: OperationPhase, to next: OperationPhase, _ observation: inout Observation,
                                settings: borrowing Settings) -> (Meter, up: Bool)? {
        if phase == .ready, let metrics = settings.metrics {
            observation.metrics = metrics
            observation.startedAt = .now
        }
        guard let meter = observation.metrics?.inFlight, (phase == .executing) != (next == .executing) else { return nil }
        return (meter, next == .executing)
    }

    /// Makes the announcements queued while this thread announced, in order, until there are
    /// none; then lets the next transition announce its own.
    private func announceQueuedTransitions() {
        while true {
            let keys = state.withLock { state -> [String] in
                if state.unannounced.isEmpty { state.announcing = false }
                // Handed out whole, not copied.
                let keys = state.unannounced
                state.unannounced = []
                return keys
            }
            guard !keys.isEmpty else { return }
            announce(keys)
        }
    }

    private func announce(_ keys: [String]) {
        for key in keys {
            willChangeValue(forKey: key)
            didChangeValue(forKey: key)
        }
    }
}
