import Foundation

/// The rules ``TransferStateMachine`` consults without changing anything: whether and when to
/// send again, and what a held-aside answer ends in. Read-only, so they
/// live apart from the transitions in `TransferStateMachine.swift`.
extension TransferStateMachine {
    /// Whether a transfer that failed with `error` is sent again: a failure a new connection
    /// may cure, mid-body of a good answer (or while already retrying: the server may be
    /// restarting), or a connection never made when the policy says so; within the policy,
    /// and only for a method that may be sent twice.
    func retryAllowed(after error: URLError) -> Bool {
        let policy = configuration.retryPolicy
        guard retries < policy.maximumRetries else { return false }
        if RetryPolicy.isConnectionFailure(error), policy.retriesConnectionFailures, attempt.status == nil {
            // Nothing was sent.
            return configuration.isIdempotent || policy.retriesNonIdempotentRequests
        }
        guard configuration.isIdempotent, RetryPolicy.isRetryable(error) else { return false }
        return attempt.status.map { $0 == 200 || $0 == 206 } ?? (retries > 0)
    }

    /// Whether an answer with `status` is to be sent again rather than be the outcome.
    func retryWanted(status: Int) -> Bool {
        let policy = configuration.retryPolicy
        return policy.retryableStatusCodes.contains(status) && retries < policy.maximumRetries
            && (configuration.isIdempotent || policy.retriesNonIdempotentRequests)
    }

    /// The wait before the next retry — the policy's, with jitter, or longer when the server
    /// asked (`Retry-After`) — or nil when it is more than the policy allows.
    func nextRetryDelay(askedFor requested: TimeInterval?) -> TimeInterval? {
        let policy = configuration.retryPolicy
        guard retries < policy.maximumRetries else { return nil }
        var delay = policy.jittered(policy.delay(beforeRetry: retries + 1), random: random())
        if let requested {
            guard requested <= policy.maximumDelay else { return nil }
            delay = max(delay, requested)
        }
        guard retryDelays + delay <= policy.maximumTotalDelay else { return nil }
        return delay
    }

    /// The outcome when the response held aside is the result. Where every status is an
    /// answer (the HTTPTypes door), one that replaces a body already begun (a retry or resume
    /// answered with an error) would end that body as if it were whole: it fails instead.
    var heldAsideOutcome: Outcome {
        let replacesABodyBegun = attempt.rangeFrom != nil || held.count > 0
        if configuration.everyStatusIsTheBody, replacesABodyBegun, let status = attempt.status {
            return .failure(.resume(.unexpectedStatus(status)))
        }
        return .responseHeldAside(intoSink: !replacesABodyBegun && configuration.errorAnswerJoinsBody)
    }
}
