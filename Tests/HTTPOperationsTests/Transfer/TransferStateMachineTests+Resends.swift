import Foundation
@testable import HTTPOperations
import Testing

/// Redirects, challenges, dropped connections, pause and resume: when the machine sends again.
extension AllTests.TransferStateMachineTests {
    // MARK: - Redirects and challenges

    @Test func aRedirectIsFollowedOrItsBodyBecomesTheBody() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        #expect(machine.headReceived(Self.head(302, ("Location", "/next"))) == .holdAside)
        #expect(Self.body(&machine, 11) == .divert)
        #expect(machine.transferCompleted(error: nil) == .redirect)
        #expect(machine.phase == .deciding)
        #expect(machine.decided(proceed: true) == .send(Machine.Send(rangeFrom: nil, validator: nil, reason: .redirect)))
        #expect(machine.headReceived(Self.head(302, ("Location", "/again"))) == .holdAside)
        #expect(Self.body(&machine, 11) == .divert)
        #expect(machine.transferCompleted(error: nil) == .redirect)
        #expect(machine.decided(proceed: false) == .report(.responseHeldAside(intoSink: true)))
        machine.heldAsideMovedIntoSink()
        #expect(machine.held.count == 11)
        #expect(machine.isFinished)
    }

    @Test func redirectsStopAtTheLimit() {
        var machine = Self.machine { $0.maximumRedirects = 2 }
        _ = machine.begin(held: 0)
        for _ in 0..<2 {
            _ = machine.headReceived(Self.head(301, ("Location", "/x")))
            #expect(machine.transferCompleted(error: nil) == .redirect)
            _ = machine.decided(proceed: true)
        }
        _ = machine.headReceived(Self.head(301, ("Location", "/x")))
        #expect(machine.transferCompleted(error: nil) == .report(.failure(.tooManyRedirects(limit: 2))))
    }

    @Test func withRedirectsOffA3xxIsTheResponse() {
        var machine = Self.machine { $0.maximumRedirects = 0 }
        _ = machine.begin(held: 0)
        #expect(machine.headReceived(Self.head(302, ("Location", "/x"))) == .holdAside)
        #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))
    }

    @Test func challengesCountFailuresAndStopAfterThree() {
        var machine = Self.machine { $0.answersChallenges = true }
        _ = machine.begin(held: 0)
        machine.credentialSent(false)
        _ = machine.headReceived(Self.head(401))
        #expect(machine.transferCompleted(error: nil) == .challenge(previousFailureCount: 0))
        for expected in [2, 3] {
            #expect(machine.decided(proceed: true) == .send(Machine.Send(rangeFrom: nil, validator: nil, reason: .challenge)))
            machine.credentialSent(true)
            _ = machine.headReceived(Self.head(401))
            #expect(machine.transferCompleted(error: nil) == .challenge(previousFailureCount: expected))
        }
        _ = machine.decided(proceed: true)
        #expect(machine.headReceived(Self.head(401)) == .holdAside, "after three rounds the challenge is the answer")
        #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))
    }

    @Test func withoutAChallengeBlockA401IsTheResponse() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        #expect(machine.headReceived(Self.head(401)) == .holdAside)
        #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))
    }

    // MARK: - Dropped connections

    @Test func aDropMidBodyIsRetriedForTheRest() {
        var machine = Self.machine { $0.retryPolicy = RetryPolicy(maximumRetries: 2, initialDelay: 0.1) }
        _ = machine.begin(held: 0)
        _ = machine.headReceived(Self.head(200, ("ETag", Self.etag), ("Content-Length", "1000")))
        _ = Self.body(&machine, 300)
        #expect(machine.transferCompleted(error: Self.dropped()) == .scheduleRetry(after: 0.1))
        #expect(machine.phase == .waitingToRetry)
        #expect(machine.retryTimerFired() == Machine.Send(rangeFrom: 300, validator: .entityTag(Self.etag), reason: .retry))
        #expect(machine.metrics.automaticResumes == 1)
        #expect(machine.metrics.resumes == 1)
        #expect(machine.metrics.firstResumeOffset == 300)
        #expect(machine.transferCompleted(error: Self.dropped()) == .scheduleRetry(after: 0.2),
                "while retrying, a drop before any head is retried too")
        _ = machine.retryTimerFired()
        #expect(machine.transferCompleted(error: Self.dropped()) == .report(.failure(.transport(Self.dropped()))),
                "the policy's retries are spent")
    }

    @Test(arguments: [
        (false, URLError.Code.networkConnectionLost, true), // a POST
        (true, .cannotFindHost, true), // not curable by a new connection
        (true, .networkConnectionLost, false), // nothing of the answer arrived
    ])
    func someDropsAreNeverRetried(idempotent: Bool, code: URLError.Code, receiving: Bool) {
        var machine = Self.machine { $0.isIdempotent = idempotent }
        _ = machine.begin(held: 0)
        if receiving {
            _ = machine.headReceived(Self.head(200, ("ETag", Self.etag)))
        }
        #expect(machine.transferCompleted(error: URLError(code)) == .report(.failure(.transport(URLError(code)))))
    }

    // MARK: - Pause and resume

    @Test func pauseStopsTheTransferAndResumeAsksForTheRest() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        _ = machine.headReceived(Self.head(200, ("ETag", Self.etag), ("Content-Length", "1000")))
        _ = Self.body(&machine, 250)
        #expect(machine.pause() == .paused(stopTransfer: true))
        #expect(machine.pause() == .ignored)
        #expect(machine.transferCompleted(error: nil) == .ignored, "the stopped transfer says nothing more")
        #expect(machine.resume() == .send(Machine.Send(rangeFrom: 250, validator: .entityTag(Self.etag), reason: .resume)))
        #expect(machine.resume() == .ignored)
        #expect(machine.metrics.resumes == 1)
        #expect(machine.metrics.firstResumeOffset == 250)
    }

    @Test func aPausedNonIdempotentRequestIsNotSentAgain() {
        var machine = Self.machine { $0.isIdempotent = false }
        _ = machine.begin(held: 0)
        _ = machine.headReceived(Self.head(200))
        #expect(machine.pause() == .paused(stopTransfer: true))
        #expect(machine.resume() == .fail(.notResendable))
        #expect(machine.isFinished)
    }

    @Test func aRequestPausedBeforeItWasSentIsSentOnResumeWhateverItsMethod() {
        var machine = Self.machine { $0.isIdempotent = false }
        #expect(machine.pause() == .paused(stopTransfer: false))
        #expect(machine.begin(held: 0) == nil)
        #expect(machine.resume() == .send(Machine.Send(rangeFrom: nil, validator: nil, reason: .first)))
    }

    @Test func aPauseDuringARetryWaitCancelsTheTimer() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        _ = machine.headReceived(Self.head(200, ("ETag", Self.etag)))
        _ = Self.body(&machine, 10)
        _ = machine.transferCompleted(error: Self.dropped())
        #expect(machine.pause() == .paused(stopTransfer: false))
        #expect(machine.retryTimerFired() == nil)
        #expect(machine.resume() == .send(Machine.Send(rangeFrom: 10, validator: .entityTag(Self.etag), reason: .resume)))
    }

    @Test func aDecisionThatComesWhilePausedWaitsForTheResume() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        _ = machine.headReceived(Self.head(307, ("Location", "/next")))
        #expect(machine.transferCompleted(error: nil) == .redirect)
        #expect(machine.pause() == .paused(stopTransfer: false))
        #expect(machine.decided(proceed: true) == .ignored)
        #expect(machine.phase == .paused(.sendDecided))
        #expect(machine.resume() == .send(Machine.Send(rangeFrom: nil, validator: nil, reason: .redirect)))
    }

    @Test func aResumeBeforeTheDecisionLetsTheDecisionSend() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        _ = machine.headReceived(Self.head(307, ("Location", "/next")))
        _ = machine.transferCompleted(error: nil)
        _ = machine.pause()
        #expect(machine.resume() == .ignored)
        #expect(machine.phase == .deciding)
        #expect(machine.decided(proceed: true) == .send(Machine.Send(rangeFrom: nil, validator: nil, reason: .redirect)))
    }
}
