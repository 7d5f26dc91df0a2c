import Foundation

/// The values ``TransferStateMachine`` works with: its configuration, phases and failures,
/// and what each of its events answers. The machine's state and transitions are in
/// `TransferStateMachine.swift`.
extension TransferStateMachine {
    /// What the machine needs to know about the operation; fixed for its life.
    struct Configuration: Equatable {
        /// Redirects to follow before failing; 0 follows none.
        var maximumRedirects = 16
        /// Whether a challenge block may answer 401 and 407 responses.
        var answersChallenges = false
        /// Challenge rounds before the challenge is the answer.
        var maximumChallenges = 3
        /// When and how often a dropped transfer is sent again.
        var retryPolicy = RetryPolicy.default
        /// Whether the method may be sent again without changing anything on the server
        /// (RFC 9110 §9.2.2). Only such requests are re-sent by resume or retry.
        var isIdempotent = true
        /// The largest body held aside while it may still be replaced.
        var provisionalBodyLimit: Int64 = 4 << 20
        /// The largest body the sink may hold (memory bodies); nil for no limit.
        var maximumBodySize: Int64?
        /// Whether the sink can drop what it holds and take the body from byte 0 (memory and
        /// files can; a caller's stream cannot).
        var canRestart = true
        /// The caller's request carries its own `Range`: its answer (a 206 included) is the
        /// body as it comes, and the machine adds no range of its own.
        var sendsOwnRange = false
        /// Whether a response body is expected at all (not for HEAD): only then must the bytes
        /// held reach the announced length.
        var expectsBody = true
        /// Whether an error answer's body (a final status outside 2xx that nothing replaces)
        /// becomes the body when nothing else is held: in memory, where it is what the
        /// response serializer reports. Never for a file or a stream, which hold only bytes
        /// of the resource: there it is reported apart.
        var errorAnswerJoinsBody = true
        /// Whether an error answer's body is delivered as it comes, like a 2xx's (the HTTPTypes
        /// door, where every status is an answer), rather than held aside. Not for a range
        /// request's answer: an error answer to a resume is never among the bytes held.
        var everyStatusIsTheBody = false
        /// Whether every answer must start with an HTTP head (http and https): a body with no
        /// head before it is not HTTP. Schemes without heads (file:) write what comes.
        var expectsHeads = false
    }

    /// Where the transfer is.
    enum Phase: Equatable {
        /// Nothing sent yet.
        case idle
        /// A transfer is with curl.
        case transferring
        /// A redirect, challenge or server-trust block is deciding what to send next
        /// (``TransferStateMachine/decision`` says which).
        case deciding
        /// The connection dropped; a retry is scheduled.
        case waitingToRetry
        /// Paused by the caller; `resumption` says what resuming does.
        case paused(Resumption)
        /// The outcome was given. Final.
        case finished
    }

    /// What a block is deciding.
    enum Decision: Equatable {
        /// Whether to follow a redirect (or where to).
        case redirect
        /// Which credential answers a 401 or 407.
        case challenge
        /// Whether to trust a server the security policy accepted, on a new connection that
        /// carried nothing yet (see ``URLConnectionOperation/setServerTrustEvaluationBlock(_:)``).
        case serverTrust
    }

    /// What the server-trust question answers.
    enum ServerTrustAction: Equatable {
        /// Ask the block; its answer comes through ``TransferStateMachine/decided(proceed:)``.
        case ask
        /// Nothing to do (paused, cancelled, finished).
        case ignored
        /// Asked too often: the outcome.
        case report(Outcome)
    }

    /// What resuming a paused transfer does.
    enum Resumption: Equatable {
        /// Send the first request (paused before anything was sent).
        case sendFirst
        /// Ask again for what is missing (the transfer was stopped, or was to be retried).
        case requestAgain
        /// A block is deciding; its answer waits for the resume.
        case awaitDecision
        /// A block decided to send another request; it is sent on resume.
        case sendDecided
    }

    /// Where the body of the current response goes.
    enum BodyRoute: Equatable {
        /// Into the sink: it is (part of) the resource.
        case sink
        /// Held aside: a response that may be replaced, or that answers a range request
        /// with something other than bytes of the resource.
        case aside
    }

    /// Why a transfer failed, as the machine sees it; ``TransferDriver`` makes the public error.
    enum Failure: Error, Equatable {
        /// curl's failure, mapped to `URLError`.
        case transport(URLError)
        /// A range answer that must not be spliced.
        case resume(ResumeError.Reason)
        /// A redirect, challenge or error body outgrew what may be held aside.
        case provisionalBodyTooLarge(limit: Int64)
        /// The body outgrew ``Configuration/maximumBodySize``.
        case bodyTooLarge(limit: Int64)
        /// More redirects than ``Configuration/maximumRedirects``.
        case tooManyRedirects(limit: Int)
        /// Resuming would send a non-idempotent request a second time.
        case notResendable
        /// The server-trust block refused the server; nothing was sent to it.
        case serverTrustRefused
        /// Writing the body to its file or stream failed.
        case write(URLError)
        /// A final status code outside 100–999.
        case malformedStatus(Int)
        /// An answer to an HTTP request with no HTTP head (a status line that does not start
        /// with `HTTP/`, which is case-sensitive).
        case notHTTP
        /// Differing `Content-Length` values (RFC 9112 §6.3).
        case conflictingContentLength
    }

    /// A request to start.
    struct Send: Equatable {
        /// `Range: bytes=<from>-` (and `If-Range` when there is a validator); nil for the
        /// whole resource.
        var rangeFrom: Int64?
        /// The validator to send as `If-Range`.
        var validator: ResumeValidator?
        /// Why: first request, resume, automatic retry, redirect, challenge answer.
        var reason: SendReason
    }

    /// Why a request is sent.
    enum SendReason: Equatable {
        case first, resume, retry, redirect, challenge, serverTrusted
    }

    /// What the outcome is.
    enum Outcome: Equatable {
        /// The transfer ended well; the body is in the sink.
        case success
        /// A 416 said the bytes held are the whole resource: complete, with no new body.
        case completeFromHeld
        /// The response whose body was held aside is the result (a refused or unfollowable
        /// redirect, an unanswered challenge, an error answer to a range). `intoSink`: its
        /// body becomes the body (nothing else is held); else it is reported apart from the
        /// bytes held, which stay as they are, with their resume data: the download is not
        /// complete.
        case responseHeldAside(intoSink: Bool)
        /// It failed.
        case failure(Failure)
    }

    /// What ``pause()`` decided.
    enum PauseAction: Equatable {
        /// Nothing to pause (finished, already paused).
        case ignored
        /// Paused; stop the transfer when `stopTransfer`. Resume data may be saved.
        case paused(stopTransfer: Bool)
    }

    /// What ``resume()`` decided.
    enum ResumeAction: Equatable {
        /// Not paused (or still waiting for a block's decision, which is sent when it comes).
        case ignored
        /// Start this request.
        case send(Send)
        /// Sending again is not allowed: report this failure.
        case fail(Failure)
    }

    /// What to do with a block's decision.
    enum DecisionAction: Equatable {
        /// Stale (cancelled, finished) or held for a resume.
        case ignored
        /// Start this request (the decided one).
        case send(Send)
        /// The block refused: the response held aside is the result.
        case report(Outcome)
    }

    /// What to do with a final head.
    enum HeadAction: Equatable {
        /// The body goes to the sink. `restartFromZero`: first drop what the sink holds (a 200
        /// answered a range request). `newIdentity`: the head named the version and length of
        /// what is now held, worth saving as resume data.
        case deliver(restartFromZero: Bool, newIdentity: Bool)
        /// The body is held aside until the transfer ends.
        case holdAside
        /// Stop the transfer before any of its body is taken.
        case abort
    }

    /// What to do with a chunk of body.
    enum BodyAction: Equatable {
        /// Write it to the sink.
        case append
        /// Keep it with the response held aside.
        case divert
        /// Take it from curl and keep nothing: an error answer's body past what is kept of it.
        case discard
        /// Not now: the writer is full; curl keeps the chunk until ``writerCaughtUp()``.
        case wait
        /// Stop the transfer (the failure is recorded).
        case abort
    }

    /// What to do once a transfer ended.
    enum CompletionAction: Equatable {
        /// Not the machine's transfer any more (paused, cancelled, finished).
        case ignored
        /// Give this outcome; the machine is finished.
        case report(Outcome)
        /// The connection dropped: send again after this delay (``retryTimerFired()``).
        case scheduleRetry(after: TimeInterval)
        /// The answer ended short of the complete length (a capped 206) after adding bytes:
        /// ask for the rest now.
        case send(Send)
        /// Follow the redirect held aside (ask the redirect block, if any; then
        /// ``decided(proceed:)``).
        case redirect
        /// Ask the challenge block (then ``decided(proceed:)``).
        case challenge(previousFailureCount: Int)
    }
}
