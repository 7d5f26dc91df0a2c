import CoreMetrics
import Foundation
import Logging

/// Start, cancel, pause, resume and the outcome: the operation's phase (`OperationPhase`,
/// derived from its ``TransferStateMachine``; see ``State``) and what Foundation is told of it.
extension URLConnectionOperation {
    /// Whether the operation is paused: started, holding its transfer, not finished.
    public var isPaused: Bool { state.withLock { $0.phase == .paused } }

    /// The body of `start()`.
    func startTransfer() {
        guard leaveReady() else {
            if isPaused { resume() }
            return
        }
        do {
            if let prepared = try prepareRequest() {
                state.withLock { $0.currentRequest = prepared }
            }
        } catch {
            NotificationCenter.default.post(name: .networkingOperationDidStart, object: self)
            conclude(.outcome(error: error))
            return
        }
        // After prepareRequest(), so observers see the request that is sent.
        NotificationCenter.default.post(name: .networkingOperationDidStart, object: self)
        // The settings and the request only: copying the whole state retains every field.
        var (settings, request, cancelledBefore, everyStatusIsAnAnswer, spanParent) = state.withLock { state in
            state.settingsTaken = true
            return (state.settings, state.currentRequest, state.cancelRequested, state.everyStatusIsAnAnswer, state.spanParent)
        }
        settings.everyStatusIsAnAnswer = everyStatusIsAnAnswer
        if cancelledBefore {
            // Cancelled before it started: nothing is opened or sent.
            conclude(.outcome(error: cancellationError()))
            return
        }
        // Answered from the cache, or refused by its policy: nothing is sent.
        if let cache = settings.configuration.cache, consultCache(cache, request: &request, settings: settings) { return }
        startSpan(spanParent, request: &request)
        // Built outside the lock: it works out the first transfer and opens the body's file.
        let connection = TransferDriver(operation: self, settings: consume settings, request: request)
        connection.logger.debug("request started")
        // Stored and queued in one lock: a pause, resume or cancel from now on queues its job
        // after this one. One that came while the connection was being made has moved the
        // machine already (begin() reads it) and left its pause completions here.
        let queued = state.withLock { state in
            state.connection = connection
            return NetworkThread.shared.perform {
                let pauseCompletions = self.state.withLock { state in
                    defer { state.pendingPauseCompletions.removeAll() }
                    return state.pendingPauseCompletions
                }
                connection.begin(whenPaused: pauseCompletions)
            }
        }
        if !queued {
            // The network thread was stopped (HTTPRequestOperationManager.shutdown): nothing
            // was sent, and nothing will be.
            NetworkThread.shared.connectionEnded()
            conclude(.outcome(error: TransferError(.networkThreadStopped, url: request.url,
                                                   detail: "The network thread was stopped; nothing was sent")))
        }
    }

    /// Finishes an operation that was never started with `error`, without sending anything
    /// (a manager that is shutting down refuses it). Does nothing once it has started.
    func refuse(_ error: any Error) {
        guard leaveReady() else { return }
        conclude(.outcome(error: error))
    }

    /// The body of `cancel()`.
    func cancelTransfer() {
        // Decided under the lock that start() uses, so a cancel racing with start() is seen
        // by exactly one of them.
        // The cancellation is the machine's outcome from now on: nothing it answers later
        // (a head, the end of a transfer) can be reported instead.
        let effective = changingPhase { state -> Bool in
            guard !state.machine.isFinished, !state.cancelRequested else { return false }
            state.cancelRequested = true
            state.machine.end()
            // Not started: start() will finish it. Started: the transfer is stopped where it
            // is, after the jobs queued before (in this lock, so none can come after it).
            if let connection = state.connection {
                NetworkThread.shared.perform { connection.cancel() }
            }
            return true
        }
        if effective { super.cancel() }
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
        let taken = changingPhase { state -> Bool in
            guard state.phase == .executing, !state.cancelRequested,
                  case .paused(let stopTransfer) = state.machine.pause() else { return false }
            guard let connection = state.connection else {
                // Before the connection exists (prepareRequest() is running): it runs them.
                if let completion { state.pendingPauseCompletions.append(completion) }
                return true
            }
            let completions = completion.map { [$0] } ?? []
            let queued = NetworkThread.shared.perform {
                connection.paused(stoppingTransfer: stopTransfer, whenPaused: completions)
            }
            // A stopped network thread has no transfer to stop: the completion runs now.
            return queued || completion == nil
        }
        guard !taken, let completion else { return }
        let (queue, group) = state.withLock { ($0.settings.configuration.completionQueue ?? Self.defaultCallbackQueue, $0.settings.configuration.completionGroup) }
        queue.async(group: group, execute: completion)
    }

    /// Resumes a paused transfer: the request is sent again with `Range` for the bytes after
    /// those held and `If-Range` naming their version, and the answer decides (see
    /// Docs/ResumableDownloads.md). A request whose method is not idempotent (POST, PATCH) is
    /// never sent twice: resuming one that was sent fails the operation with
    /// ``TransferError`` `.requestNotResendable`. Does nothing unless the operation is paused
    /// and not cancelled.
    public func resume() {
        changingPhase { state in
            guard state.phase == .paused, !state.cancelRequested else { return }
            let action = state.machine.resume()
            // No connection yet: the machine is idle again, and begin() sends the first request.
            guard let connection = state.connection else { return }
            switch action {
            case .ignored:
                break
            case .send(let send):
                let attempt = state.machine.attempt.number
                NetworkThread.shared.perform { connection.start(resumed: send, attempt: attempt) }
            case .fail(let failure):
                NetworkThread.shared.perform { connection.resumeFailed(failure) }
            }
        }
    }

    /// Runs `observer` once the operation's outcome is known: after ``processResponse()`` (and
    /// so after the success or failure block), before the operation is marked finished, on
    /// the completion queue. Operations that depend on this one start after it. Added after
    /// the outcome is known, it runs at once.
    func whenOutcomeKnown(_ observer: @escaping @Sendable (URLConnectionOperation) -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard state.delivery < .observersTaken else { return true }
            state.outcomeObservers.append(observer)
            return false
        }
        if runNow { observer(self) }
    }

    // MARK: - Completion

    /// Records the outcome of the transfer and finishes the operation on its callback queue:
    /// the last progress, processResponse(), then the finished state, then the notification.
    /// - Parameter result: The answer, what was measured, and how to deliver it.
    func conclude(_ result: consuming TransferResult) {
        // The result's fields are read where they are used, and `deliver` captures its own
        // straight from the result: bound to local names first, each would be copied there,
        // then into the closure, and the locals released (Docs/Performance.md, "The transfer
        // request, moved").
        let (completionQueue, group, pauseCompletions, consultedCache) = changingPhase { state in
            // Ended already when the connection reports; here for the outcomes found before
            // one existed (a request that could not be prepared, a cancel before start).
            state.machine.end()
            state.connection = nil
            if let response = result.response {
                state.response = response
                // Kept when it is the one the response was made from (the HTTPTypes door
                // reads its fields as received); an older head would contradict it.
                state.responseHead = result.head.flatMap { head in response.url.map { (head, $0) } }
            }
            state.responseData = result.data
            // A cancel that won the lock makes this a cancellation: no trailers of a failure.
            state.responseTrailers = state.cancelRequested ? nil : result.trailers
            state.timings = result.timings
            // Complete: there is nothing left to resume (in this lock, not one more).
            if result.complete ?? (result.error == nil) { state.resumeData = nil }
            // A cancel that won the lock before this point turns any outcome into a
            // cancellation: a cancelled operation never reports success.
            state.error = state.cancelRequested ? cancellationError() : result.error
            // The blocks are done with: a block that captures its operation must not keep it
            // alive (they run on the callback queue, whose reporters hold their own copies).
            // Only from settings of its own: shared ones are the manager's (a block set on the
            // operation copies them first), whose blocks do not capture the operation, and
            // writing would copy them.
            if state.settings.holdsBlocks, state.sharedSettings.isOwn() { state.settings.dropBlocks() }
            defer { state.pendingPauseCompletions.removeAll() }
            return (state.settings.configuration.completionQueue, state.settings.configuration.completionGroup, state.pendingPauseCompletions,
                    state.cacheExchange != nil)
        }
        let queue = result.callbackQueue ?? completionQueue ?? Self.defaultCallbackQueue
        // Pauses asked for before a connection existed, and now moot.
        for completion in pauseCompletions { queue.async(group: group, execute: completion) }
        let deliver: @Sendable () -> Void = { [progress = result.progress, completion = result.completionCheck, data = result.data,
                                              timings = result.timings, retries = result.retries, resumes = result.resumes,
                                              log = result.log] in
            for reporter in progress { reporter.deliverPending() }
            // Before the serializer: a 304 to the cache's revalidation becomes the stored answer.
            // Read in the lock above, so an operation without a cache takes no lock more here.
            if consultedCache { self.cacheAnswerArrived() }
            if let failure = completion?(data) {
                // Integrity is checked only for a success; a cancellation stays a cancellation.
                self.state.withLock { state in
                    if !state.cancelRequested { state.error = failure }
                }
            }
            self.processResponse()
            let observers = self.changingPhase { state in
                // Idempotent, as the flags it replaced were: a second outcome moves nothing back.
                state.delivery = max(state.delivery, .observersTaken)
                var observers: [@Sendable (URLConnectionOperation) -> Void] = []
                swap(&observers, &state.outcomeObservers)
                return observers
            }
            // Taken, not copied: the span is ended once, and the metrics stay for the in-flight
            // meter's last move. In a lock of its own: returned through `changingPhase`'s
            // generic tuple, it would be copied twice more.
            let observation = self.state.withLock { state in
                Observation(metrics: state.observation.metrics, startedAt: state.observation.startedAt,
                            span: state.observation.span.take())
            }
            // Before the observers: whoever awaits the outcome finds it measured.
            self.reportOutcome(observation, timings: timings, retries: retries, resumes: resumes)
            for observer in observers { observer(self) }
            self.changingPhase { $0.delivery = max($0.delivery, .delivered) }
            if let (logger, metadata) = log {
                var metadata = metadata
                if let error = self.error { metadata[RequestLogging.errorKey] = "\(error)" }
                logger.debug("request finished", metadata: metadata)
                if let timings { logger.trace("timings", metadata: ["httpop.timings": "\(timings)"]) }
            }
            NotificationCenter.default.post(name: .networkingOperationDidFinish, object: self,
                                            userInfo: timings.map { [Notification.transferTimingsKey: $0] })
        }
        if let handoff = result.handoff {
            // Consumed: the network thread must not hold the last reference to this operation.
            handoff.deliver(on: queue, group: group, consume deliver)
        } else {
            queue.async(group: group, execute: deliver)
        }
    }

    /// Where callbacks run when no completion queue is set: the global queue. Made once,
    /// because `DispatchQueue.global()` makes a new object on every call.
    static let defaultCallbackQueue = DispatchQueue.global()

    /// A serial queue for one operation's callbacks, running them on `completionQueue` (a
    /// global concurrent queue when nil): in order, never two at once.
    static func makeCallbackQueue(targeting completionQueue: DispatchQueue?) -> DispatchQueue {
        DispatchQueue(label: "HTTPOperations.callbacks", target: completionQueue ?? defaultCallbackQueue)
    }

    func cancellationError() -> URLError {
        URLError(.cancelled, url: request.url, description: "The operation was cancelled.")
    }

    // MARK: - Transitions

    /// Takes the operation out of `ready` (start() or a refusal), once. False when it was
    /// taken before.
    private func leaveReady() -> Bool {
        changingPhase { state in
            guard state.delivery == .ready else { return false }
            state.delivery = .running
            return true
        }
    }

    /// Runs `update` in the operation's lock and tells Foundation (and the in-flight meter)
    /// when the phase derived from the state changed. Every change of the machine or of the
    /// ``Delivery`` goes through here, from whatever thread.
    ///
    /// Foundation reads `isFinished` and `isExecuting` while it reacts to an announcement, so
    /// announcements are made outside the lock. To keep them in the order of the changes,
    /// the thread that finds nobody announcing announces its own keys and then whatever other
    /// changes queued meanwhile; a change that finds somebody announcing queues its keys for
    /// them. (The common case queues nothing and allocates nothing.)
    @discardableResult
    func changingPhase<Result: Sendable>(_ update: (inout State) -> Result) -> Result {
        let outcome = state.withLock { state -> (result: Result, announceNow: [String]?, inFlight: (Meter, up: Bool)?) in
            let before = state.phase
            let deliveryBefore = state.delivery
            let result = update(&state)
            assert((0...1).contains(state.delivery.rawValue - deliveryBefore.rawValue),
                   "delivery \(deliveryBefore) → \(state.delivery): forward only, one step at a time")
            let after = state.phase
            guard after != before else { return (result, nil, nil) }
            assert(before.canTransition(to: after), "phase \(before) → \(after)")
            let keys = before.changedKeys(to: after)
            // Only the metrics, read first: both are computed properties of the state now, and
            // passing the settings beside an inout access would copy them.
            let metrics = before == .ready ? state.settings.configuration.metrics : nil
            let inFlight = inFlightChange(from: before, to: after, &state.observation, metrics: metrics)
            guard !state.announcing else {
                state.unannounced.append(contentsOf: keys)
                return (result, nil, inFlight)
            }
            state.announcing = true
            return (result, keys, inFlight)
        }
        // The meter is a metrics backend's: called outside the lock.
        // (A meter ignores a negative increment: down is `decrement`.)
        if let (meter, up) = outcome.inFlight {
            if up { meter.increment() } else { meter.decrement() }
        }
        if let keys = outcome.announceNow {
            announce(phaseKeys: keys)
            announceQueuedTransitions()
        }
        return outcome.result
    }

    /// How the in-flight meter moves from `phase` to `next`: up when the operation starts
    /// executing, down when it stops (paused or finished), on the instruments fixed when it
    /// left `ready` — so every increment has its decrement, whatever is set meanwhile.
    private func inFlightChange(from phase: OperationPhase, to next: OperationPhase, _ observation: inout Observation,
                                metrics: RequestMetrics?) -> (Meter, up: Bool)? {
        if phase == .ready, let metrics {
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
            announce(phaseKeys: keys)
        }
    }
}
