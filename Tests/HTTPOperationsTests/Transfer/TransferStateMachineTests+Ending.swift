import Foundation
@testable import HTTPOperations
import Testing

/// Ending, limits, the writer, and every phase against every event.
extension AllTests.TransferStateMachineTests {
    // MARK: - Ending, limits, the writer

    @Test func aServerTrustQuestionSendsTheSameRequestOnYesAndFailsOnNo() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        #expect(machine.serverTrustQuestioned() == .ask)
        #expect(machine.phase == .deciding)
        #expect(machine.decided(proceed: true) == .send(.init(rangeFrom: nil, validator: nil, reason: .serverTrusted)))
        #expect(machine.phase == .transferring)

        var refused = Self.machine()
        _ = refused.begin(held: 0)
        _ = refused.serverTrustQuestioned()
        #expect(refused.decided(proceed: false) == .report(.failure(.serverTrustRefused)))
        #expect(refused.isFinished)

        // Paused while the block decides: its yes waits for the resume, which sends again.
        var paused = Self.machine()
        _ = paused.begin(held: 0)
        _ = paused.serverTrustQuestioned()
        _ = paused.pause()
        #expect(paused.decided(proceed: true) == .ignored)
        #expect(paused.resume() == .send(.init(rangeFrom: nil, validator: nil, reason: .serverTrusted)))
    }

    @Test func aServerWhoseChainKeepsChangingIsAskedAboutABoundedNumberOfTimes() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        for _ in 0..<machine.configuration.maximumChallenges {
            #expect(machine.serverTrustQuestioned() == .ask)
            _ = machine.decided(proceed: true)
        }
        #expect(machine.serverTrustQuestioned() == .report(.failure(.serverTrustRefused)))
        #expect(machine.isFinished)
    }

    @Test func endingIsOnceAndSilencesEveryLaterEvent() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        let (first, second) = (machine.end(), machine.end())
        #expect(first)
        #expect(!second)
        #expect(machine.headReceived(Self.head(200)) == .abort)
        #expect(Self.body(&machine, 1) == .abort)
        #expect(machine.transferCompleted(error: nil) == .ignored)
        #expect(machine.pause() == .ignored)
        #expect(machine.resume() == .ignored)
        #expect(machine.retryTimerFired() == nil)
        #expect(machine.decided(proceed: true) == .ignored)
        let resumed = machine.writerCaughtUp()
        #expect(!resumed)
    }

    @Test func aBodyHeldAsideHasALimit() {
        var machine = Self.machine { $0.provisionalBodyLimit = 100 }
        _ = machine.begin(held: 0)
        _ = machine.headReceived(Self.head(302, ("Location", "/x")))
        #expect(Self.body(&machine, 100) == .divert)
        #expect(Self.body(&machine, 1) == .abort)
        #expect(machine.transferCompleted(error: URLError(.cannotWriteToFile))
                    == .report(.failure(.provisionalBodyTooLarge(limit: 100))))
    }

    @Test func theBodySizeLimitStopsAnAnnouncedOrAGrowingBody() {
        var announced = Self.machine { $0.maximumBodySize = 1000 }
        _ = announced.begin(held: 0)
        #expect(announced.headReceived(Self.head(200, ("Content-Length", "1001"))) == .abort)
        #expect(announced.transferCompleted(error: URLError(.cannotWriteToFile)) == .report(.failure(.bodyTooLarge(limit: 1000))))

        var growing = Self.machine { $0.maximumBodySize = 1000 }
        _ = growing.begin(held: 0)
        _ = growing.headReceived(Self.head(200))
        #expect(Self.body(&growing, 1000) == .append)
        #expect(Self.body(&growing, 1) == .abort)
        #expect(growing.held.count == 1000)
    }

    /// The limit is on a body, and some answers have none whatever their `Content-Length`
    /// says (RFC 9110 §8.6): the answer to a HEAD (the length of the GET's body), a 304 and
    /// a 204, which reach the caller where every status is an answer.
    @Test func anAnswerWithoutABodyIsNeverTooLarge() {
        var head = Self.machine { $0.maximumBodySize = 10; $0.expectsBody = false }
        _ = head.begin(held: 0)
        #expect(head.headReceived(Self.head(200, ("Content-Length", "1000"))) == .deliver(restartFromZero: false, newIdentity: true))
        #expect(head.transferCompleted(error: nil) == .report(.success))
        for status in [204, 304] {
            var machine = Self.machine { $0.maximumBodySize = 10; $0.everyStatusIsTheBody = true }
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(Self.head(status, ("Content-Length", "1000"))) != .abort, "\(status)")
            #expect(machine.transferCompleted(error: nil) != .report(.failure(.bodyTooLarge(limit: 10))), "\(status)")
        }
    }

    @Test func aFullWriterHoldsTheChunkUntilItCatchesUp() {
        var machine = Self.machine()
        _ = machine.begin(held: 0)
        _ = machine.headReceived(Self.head(200))
        #expect(Self.body(&machine, 10, admission: .wait) == .wait)
        #expect(machine.held.count == 0)
        let (first, second) = (machine.writerCaughtUp(), machine.writerCaughtUp())
        #expect(first)
        #expect(!second, "once")
        #expect(Self.body(&machine, 10) == .append)
        let failure = URLError(.cannotWriteToFile)
        #expect(Self.body(&machine, 10, admission: .failed(failure)) == .abort)
        #expect(machine.transferCompleted(error: URLError(.cannotWriteToFile)) == .report(.failure(.write(failure))))
    }

    // MARK: - Every phase against every event

    enum Event: String, CaseIterable {
        case begin, head, body, completed, dropped, pause, resume, end, retryTimer, proceed, refuse, writerCaughtUp, trustQuestioned
    }

    /// A machine in `phase`, reached through events (with a body of 10 bytes held and a
    /// validator, where the phase allows it).
    static func machine(in phase: Machine.Phase) -> Machine {
        var machine = Self.machine()
        switch phase {
        case .idle:
            return machine
        case .paused(.sendFirst):
            // Paused before anything was sent; the driver always begins (begin keeps it
            // paused). A resume before begin is aResumeBeforeTheTransferBeganLeavesTheFirstSendToBegin.
            _ = machine.pause()
            _ = machine.begin(held: 0)
            return machine
        case .finished:
            _ = machine.end()
            return machine
        default:
            break
        }
        _ = machine.begin(held: 0)
        switch phase {
        case .transferring:
            _ = machine.headReceived(Self.head(200, ("ETag", Self.etag)))
            _ = Self.body(&machine, 10)
        case .waitingToRetry, .paused(.requestAgain):
            _ = machine.headReceived(Self.head(200, ("ETag", Self.etag)))
            _ = Self.body(&machine, 10)
            _ = machine.transferCompleted(error: Self.dropped())
            if phase != .waitingToRetry { _ = machine.pause() }
        case .deciding, .paused(.awaitDecision), .paused(.sendDecided):
            _ = machine.headReceived(Self.head(302, ("Location", "/x")))
            _ = machine.transferCompleted(error: nil)
            if phase != .deciding { _ = machine.pause() }
            if phase == .paused(.sendDecided) { _ = machine.decided(proceed: true) }
        default:
            Issue.record("no recipe for \(phase)")
        }
        #expect(machine.phase == phase, "recipe for \(phase)")
        return machine
    }

    /// The phase after `event`, from a machine in `phase`.
    static func phase(after event: Event, from phase: Machine.Phase) -> Machine.Phase {
        var machine = machine(in: phase)
        switch event {
        case .begin: _ = machine.begin(held: 0)
        case .head: _ = machine.headReceived(Self.head(200))
        case .body: _ = Self.body(&machine, 1)
        case .completed: _ = machine.transferCompleted(error: nil)
        case .dropped: _ = machine.transferCompleted(error: Self.dropped())
        case .pause: _ = machine.pause()
        case .resume: _ = machine.resume()
        case .end: _ = machine.end()
        case .retryTimer: _ = machine.retryTimerFired()
        case .proceed: _ = machine.decided(proceed: true)
        case .refuse: _ = machine.decided(proceed: false)
        case .writerCaughtUp: _ = machine.writerCaughtUp()
        case .trustQuestioned: _ = machine.serverTrustQuestioned()
        }
        return machine.phase
    }

    @Test func everyPhaseAnswersEveryEvent() {
        let T = Machine.Phase.transferring, F = Machine.Phase.finished
        let sendFirst = Machine.Phase.paused(.sendFirst), again = Machine.Phase.paused(.requestAgain)
        let waiting = Machine.Phase.paused(.awaitDecision), decided = Machine.Phase.paused(.sendDecided)
        // Columns: begin, head, body, completed, dropped, pause, resume, end, retryTimer,
        // proceed, refuse, writerCaughtUp, trustQuestioned. (Rows as in Docs/Architecture.md.)
        let table: [(Machine.Phase, [Machine.Phase])] = [
            (.idle, [T, .idle, .idle, .idle, .idle, sendFirst, .idle, F, .idle, .idle, .idle, .idle, .idle]),
            (T, [T, T, T, F, .waitingToRetry, again, T, F, T, T, T, T, .deciding]),
            (.deciding, [.deciding, .deciding, .deciding, .deciding, .deciding, waiting, .deciding, F, .deciding, T, F, .deciding,
                         .deciding]),
            (.waitingToRetry, [.waitingToRetry, .waitingToRetry, .waitingToRetry, .waitingToRetry, .waitingToRetry, again,
                               .waitingToRetry, F, T, .waitingToRetry, .waitingToRetry, .waitingToRetry, .waitingToRetry]),
            (sendFirst, [sendFirst, sendFirst, sendFirst, sendFirst, sendFirst, sendFirst, T, F, sendFirst, sendFirst, sendFirst,
                         sendFirst, sendFirst]),
            (again, [again, again, again, again, again, again, T, F, again, again, again, again, again]),
            (waiting, [waiting, waiting, waiting, waiting, waiting, waiting, .deciding, F, waiting, decided, F, waiting, waiting]),
            (decided, [decided, decided, decided, decided, decided, decided, T, F, decided, decided, decided, decided, decided]),
            (F, [F, F, F, F, F, F, F, F, F, F, F, F, F]),
        ]
        for (from, row) in table {
            for (event, expected) in zip(Event.allCases, row) {
                #expect(Self.phase(after: event, from: from) == expected, "\(from) + \(event.rawValue)")
            }
        }
    }
}
