import Foundation

/// The life of one operation's transfer as a value: it takes events (a head arrived, a body
/// chunk, the transfer ended, pause, resume, cancel, a retry timer, a redirect or challenge
/// decision) and answers with what to do. It does no I/O and knows nothing of curl or
/// threads, so every transition is tested without a socket (`TransferStateMachineTests`).
///
/// ``TransferDriver`` drives it on the network thread and performs what it answers. What it
/// decides:
///
/// - where each response's body goes: to the sink (memory, file or stream), aside (a
///   redirect, a challenge, an error answer to a range, all of which may be replaced), or
///   nowhere (the transfer is stopped);
/// - how a range answer is read (``ResumePolicy``), so that bytes of another version or
///   offset are never appended;
/// - when to send again: a redirect, a challenge answer, a resume after pause, an automatic
///   retry after a drop (idempotent methods only);
/// - the outcome, once.
///
/// A transfer may see several final heads: curl answers an authentication challenge itself
/// when it has a credential (it probes for the scheme first), so a 401 can come before the
/// real answer on the same transfer. Each head is judged on its own and replaces the body
/// route of the one before; a body held aside for an earlier head is dropped.
struct TransferStateMachine: Sendable {
    // MARK: - State

    /// Fixed by ``configure(_:validator:entityTag:lastModified:knownLength:)`` before the
    /// transfer begins.
    private(set) var configuration: Configuration
    private(set) var phase = Phase.idle
    /// The bytes held in the sink and their version.
    private(set) var held = HeldContent()
    private(set) var metrics = DownloadMetrics()
    private(set) var retries = 0
    /// The waits of the retries scheduled so far, in seconds.
    private(set) var retryDelays: TimeInterval = 0
    /// A number in 0...1 for each retry's jitter; tests give their own.
    var random: @Sendable () -> Double = { Double.random(in: 0...1) }
    private(set) var redirects = 0
    private(set) var challenges = 0
    /// ``begin(held:)`` was called.
    private(set) var hasBegun = false
    /// What the block asked last is deciding (kept while paused).
    private(set) var decision: Decision?
    /// How often the server-trust block was asked.
    private(set) var serverTrustQuestions = 0
    /// What the current (or last) transfer asked for and got.
    private(set) var attempt = Attempt()

    /// The parameters after `configuration` describe the bytes held from resume data (see
    /// ``HeldContent/init(validator:entityTag:lastModified:knownLength:rangeWithoutValidator:)``).
    init(configuration: Configuration, validator: ResumeValidator? = nil, entityTag: String? = nil,
         lastModified: String? = nil, knownLength: Int64? = nil, rangeWithoutValidator: Bool = false) {
        self.configuration = configuration
        configure(configuration, validator: validator, entityTag: entityTag, lastModified: lastModified,
                  knownLength: knownLength, rangeWithoutValidator: rangeWithoutValidator)
    }

    /// Fixes what the operation's settings say, when its transfer is about to begin. The
    /// machine lives as long as its operation (whose phase is derived from it), so a pause,
    /// resume or cancel made before then has already moved it: its phase is kept.
    mutating func configure(_ configuration: Configuration, validator: ResumeValidator? = nil, entityTag: String? = nil,
                            lastModified: String? = nil, knownLength: Int64? = nil, rangeWithoutValidator: Bool = false) {
        guard !hasBegun else { return }
        self.configuration = configuration
        self.held = HeldContent(validator: validator, entityTag: entityTag, lastModified: lastModified,
                                knownLength: knownLength, rangeWithoutValidator: rangeWithoutValidator)
    }

    /// Whether the outcome was given.
    var isFinished: Bool { phase == .finished }

    /// The outcome came while the caller held a pause (a cancel, the total timeout, a write
    /// failure, a block's refusal). The operation then stays paused until the outcome is
    /// delivered, so its phase never changes on the network thread: Foundation's observers
    /// and the metrics backend hear of it on the callback queue, with the outcome.
    private(set) var endedPaused = false

    /// Whether the caller paused the transfer.
    var isPaused: Bool {
        if case .paused = phase { return true }
        return false
    }

    // MARK: - Starting, pausing, resuming, cancelling

    /// The operation's transfer begins with `held` bytes already in the sink (a file that is
    /// continued). Returns the first request, or nil when paused before it (or finished).
    mutating func begin(held: Int64) -> Send? {
        // Once, and only before anything was sent (a pause before it leaves `.sendFirst`).
        guard !hasBegun, phase == .idle || phase == .paused(.sendFirst) else { return nil }
        hasBegun = true
        self.held.begin(with: held)
        if held > 0 {
            metrics.resumes += 1
            metrics.firstResumeOffset = held
        }
        return phase == .idle ? send(.first) : nil
    }

    mutating func pause() -> PauseAction {
        switch phase {
        case .idle:
            phase = .paused(.sendFirst)
            return .paused(stopTransfer: false)
        case .transferring:
            phase = .paused(.requestAgain)
            attempt.waitingForWriter = false
            return .paused(stopTransfer: true)
        case .waitingToRetry:
            phase = .paused(.requestAgain)
            return .paused(stopTransfer: false)
        case .deciding:
            phase = .paused(.awaitDecision)
            return .paused(stopTransfer: false)
        case .paused, .finished:
            return .ignored
        }
    }

    mutating func resume() -> ResumeAction {
        guard case .paused(let resumption) = phase else { return .ignored }
        switch resumption {
        case .sendFirst:
            // Paused and resumed before the transfer began: not paused any more, and
            // ``begin(held:)`` sends the first request with the bytes held (sending now would
            // ignore them).
            guard hasBegun else {
                phase = .idle
                return .ignored
            }
            return .send(send(.first))
        case .awaitDecision:
            phase = .deciding
            return .ignored
        case .sendDecided:
            return .send(send(reasonToSend))
        case .requestAgain:
            guard configuration.isIdempotent else {
                phase = .finished
                return .fail(.notResendable)
            }
            countResume(automatic: false)
            return .send(send(.resume))
        }
    }

    /// Ends the transfer: the caller cancelled, or the driver found a failure of its own (a
    /// request it could not build, a file it could not open). True when there was something
    /// to end: stop the transfer and report; false when the outcome was already given.
    @discardableResult
    mutating func end() -> Bool {
        guard phase != .finished else { return false }
        finish()
        return true
    }

    /// The outcome is given: the machine is finished (noting whether it was paused then).
    private mutating func finish() {
        if isPaused { endedPaused = true }
        phase = .finished
    }

    // MARK: - Sending

    /// Starts a transfer for the current request, asking for the bytes after those held
    /// (unless the caller's request names its own range).
    private mutating func send(_ reason: SendReason) -> Send {
        phase = .transferring
        let from = held.rangeStart(sendsOwnRange: configuration.sendsOwnRange)
        attempt = Attempt(sentFrom: from, number: attempt.number + 1)
        return Send(rangeFrom: from, validator: from == nil ? nil : held.validator, reason: reason)
    }

    /// Records that the request about to go carries the credential.
    mutating func credentialSent(_ sent: Bool) {
        attempt.sentCredential = sent
    }

    private mutating func countResume(automatic: Bool) {
        metrics.resumes += 1
        if automatic { metrics.automaticResumes += 1 }
        if metrics.firstResumeOffset == nil { metrics.firstResumeOffset = held.count }
    }

    /// The retry timer fired: the request to send again, or nil when the retry no longer
    /// applies (paused, cancelled, finished).
    mutating func retryTimerFired() -> Send? {
        guard phase == .waitingToRetry else { return nil }
        // A resume only when there are bytes to continue (not after a 503 or a refused connection).
        if held.count > 0 { countResume(automatic: true) }
        return send(.retry)
    }

    // MARK: - Decisions of the redirect and challenge blocks

    /// A redirect or challenge block decided: `proceed` sends the request it gave (a redirect
    /// to follow, or the same request with a credential).
    mutating func decided(proceed: Bool) -> DecisionAction {
        switch phase {
        case .deciding:
            guard proceed else { return .report(conclude(refusedOutcome)) }
            return .send(send(reasonToSend))
        case .paused(.awaitDecision):
            guard proceed else { return .report(conclude(refusedOutcome)) }
            phase = .paused(.sendDecided)
            return .ignored
        default:
            return .ignored
        }
    }

    /// Why the request the block decided on is sent.
    private var reasonToSend: SendReason {
        switch decision {
        case .redirect: .redirect
        case .challenge: .challenge
        case .serverTrust, nil: .serverTrusted
        }
    }

    /// The outcome when the block said no: the response held aside for a redirect or
    /// challenge; a failure for a server not trusted.
    private var refusedOutcome: Outcome {
        decision == .serverTrust ? .failure(.serverTrustRefused) : heldAsideOutcome
    }

    // MARK: - Server trust

    /// The transfer stopped before sending anything, on a new connection whose server the
    /// server-trust block has not judged: the block is asked (phase `.deciding`); its
    /// answer comes through ``decided(proceed:)`` (yes: the same request again, on a new
    /// connection; no: ``Failure/serverTrustRefused``). Ignored when the question no longer
    /// applies (paused, cancelled, finished).
    mutating func serverTrustQuestioned() -> ServerTrustAction {
        guard phase == .transferring else { return .ignored }
        // A server whose chain changes on every connection is asked about a bounded number
        // of times, like a challenge.
        guard serverTrustQuestions < configuration.maximumChallenges else {
            return .report(conclude(.failure(.serverTrustRefused)))
        }
        serverTrustQuestions += 1
        phase = .deciding
        decision = .serverTrust
        return .ask
    }

    /// Gives `outcome`: the machine is finished.
    mutating func conclude(_ outcome: Outcome) -> Outcome {
        finish()
        return outcome
    }

    // MARK: - Heads

    /// A final head arrived. Each head of a transfer is judged on its own: a body held aside
    /// for an earlier one (curl's own authentication round) is dropped.
    mutating func headReceived(_ head: ResponseHead) -> HeadAction {
        guard phase == .transferring, attempt.failure == nil, !attempt.versionChanged else { return .abort }
        // A status outside the three digits 100–999 is no HTTP answer: nginx, for one, passes
        // an upstream's HTTP/0.9 reply on over HTTP/2 as `:status 009`. Nothing of it is
        // kept. An unknown three-digit code is an answer (RFC 9110 §15), and outside 2xx an
        // error answer, which reaches the caller with its status.
        guard (100...999).contains(head.statusCode) else { return attempt.abort(.malformedStatus(head.statusCode)) }
        // More than one body length: the framing cannot be trusted (RFC 9112 §6.3).
        guard !head.hasConflictingContentLength else { return attempt.abort(.conflictingContentLength) }
        attempt.headArrived(status: head.statusCode)
        if retryWanted(status: head.statusCode) {
            // Sent again: its body is held aside, never part of the download.
            attempt.retryAfter = head.value(of: "Retry-After").flatMap { RetryPolicy.retryAfter($0) } ?? 0
            attempt.route = .aside
            return .holdAside
        }
        return attempt.read(head, held: &held, metrics: &metrics, configuration: configuration, challenges: challenges)
    }

    // MARK: - Body

    /// A chunk of `count` body bytes arrived (see ``Attempt/admit(_:held:configuration:admission:)``).
    mutating func bodyReceived(count: Int, admission: () -> BodyWriter.Admission) -> BodyAction {
        guard phase == .transferring, attempt.failure == nil, !attempt.versionChanged else { return .abort }
        guard attempt.status != nil || !configuration.expectsHeads else {
            // Body bytes with no HTTP head before them: curl took a status line we do not
            // (`Http/1.1 500`). Nothing of it is kept.
            attempt.failure = .notHTTP
            return .abort
        }
        return attempt.admit(Int64(count), held: &held, configuration: configuration, admission: admission)
    }

    /// Writing the body to its file or stream failed (the writer says so as soon as it
    /// happens, whatever the machine is doing): nothing more can be written, so the download
    /// ends with that failure. Nil when the outcome was already given.
    mutating func writerFailed(_ error: URLError) -> Outcome? {
        guard phase != .finished else { return nil }
        return conclude(.failure(.write(error)))
    }

    /// A head arrived while the writer already holds a failure whose event has not come yet:
    /// the transfer is aborted from inside curl's callback, and its completion reports the
    /// write failure (it may not be stopped from there: curl forbids removing a transfer
    /// from inside its callbacks).
    mutating func writerFailedBeforeHead(_ error: URLError) {
        guard phase == .transferring, attempt.failure == nil else { return }
        attempt.failure = .write(error)
    }

    /// The writer made room. True when the transfer that waited for it should go on.
    mutating func writerCaughtUp() -> Bool {
        guard phase == .transferring, attempt.waitingForWriter else { return false }
        attempt.waitingForWriter = false
        return true
    }

    /// The body held aside became the body (``Outcome/responseHeldAside(intoSink:)``).
    mutating func heldAsideMovedIntoSink() {
        held.add(attempt.asideBytes)
        attempt.asideBytes = 0
    }

    /// The machine's phase, attempt and recorded failure, named in the error of a transfer it
    /// refused a head or body chunk of (``CurlTransfer/refusal``).
    var refusalState: String {
        "\(phase), attempt \(attempt.number), failure \(attempt.failure.map { "\($0)" } ?? "none")"
            + (attempt.versionChanged ? ", version changed" : "")
    }

    // MARK: - The end of a transfer

    /// The transfer ended: `error` is curl's failure, nil for a complete response.
    mutating func transferCompleted(error: URLError?) -> CompletionAction {
        guard phase == .transferring else { return .ignored }
        if let failure = attempt.failure {
            return .report(conclude(.failure(failure)))
        }
        if attempt.versionChanged {
            return .send(send(.retry))
        }
        if error == nil, configuration.expectsHeads, attempt.status == nil {
            // Complete, with no HTTP head: not an HTTP answer, even without a body.
            return .report(conclude(.failure(.notHTTP)))
        }
        if let error {
            guard retryAllowed(after: error), let delay = nextRetryDelay(askedFor: nil) else {
                return .report(conclude(.failure(.transport(error))))
            }
            return scheduleRetry(after: delay)
        }
        if attempt.completeWithoutBody {
            return .report(conclude(.completeFromHeld))
        }
        if let retryAfter = attempt.retryAfter {
            // A retryable status: again, unless the policy's waits are spent; then the answer
            // (held aside) is the outcome.
            if let delay = nextRetryDelay(askedFor: retryAfter) { return scheduleRetry(after: delay) }
            return .report(conclude(heldAsideOutcome))
        }
        guard attempt.route == .aside, let status = attempt.status else {
            return completeOrContinue()
        }
        if RedirectPolicy.redirectStatusCodes.contains(status), attempt.hasLocation, configuration.maximumRedirects > 0 {
            redirects += 1
            guard redirects <= configuration.maximumRedirects else {
                return .report(conclude(.failure(.tooManyRedirects(limit: configuration.maximumRedirects))))
            }
            phase = .deciding
            decision = .redirect
            return .redirect
        }
        if status == 401 || status == 407, configuration.answersChallenges, challenges < configuration.maximumChallenges {
            challenges += 1
            phase = .deciding
            decision = .challenge
            return .challenge(previousFailureCount: challenges - 1 + (attempt.sentCredential ? 1 : 0))
        }
        return .report(conclude(heldAsideOutcome))
    }

    /// A body ended well: a success only when the bytes held are the complete length, when it
    /// is known. Short of it (a 206 capped by the server), the rest is asked for at once when
    /// the answer added bytes (so this ends), and after a retry's wait when it did not; when
    /// the policy allows no more, it fails with the bytes held and their resume data kept.
    private mutating func completeOrContinue() -> CompletionAction {
        // Without a complete length (`bytes N-M/*`) a 206 still names its last byte: a body
        // that ended short of it (close-delimited, cut off) is no more complete.
        let target = held.knownLength ?? (attempt.status == 206 ? attempt.rangeEnd : nil)
        guard let length = target, configuration.expectsBody, !configuration.sendsOwnRange, held.count != length,
              attempt.status == 200 || attempt.status == 206 else {
            return .report(conclude(.success))
        }
        guard held.count < length else {
            // More than the complete length: curl enforces Content-Length, so only a server
            // that contradicts itself gets here. Never a success.
            return .report(conclude(.failure(.resume(.lengthChanged(expected: length, received: held.count)))))
        }
        let policy = configuration.retryPolicy
        guard configuration.isIdempotent, policy.maximumRetries > 0 else {
            return .report(conclude(.failure(.resume(.incomplete(held: held.count, length: length)))))
        }
        if attempt.appended > 0 {
            countResume(automatic: true)
            return .send(send(.resume))
        }
        guard retries < policy.maximumRetries, let delay = nextRetryDelay(askedFor: nil) else {
            return .report(conclude(.failure(.resume(.incomplete(held: held.count, length: length)))))
        }
        return scheduleRetry(after: delay)
    }

    private mutating func scheduleRetry(after delay: TimeInterval) -> CompletionAction {
        retries += 1
        retryDelays += delay
        phase = .waitingToRetry
        return .scheduleRetry(after: delay)
    }
}
