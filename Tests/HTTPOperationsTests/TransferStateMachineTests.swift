import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// ``TransferStateMachine`` fed events by hand: no socket, no curl, no thread. The table
    /// at the end checks every phase against every event; the tests before it follow each
    /// path a transfer takes (Docs/Architecture.md, "The transfer state machine").
    @Suite struct TransferStateMachineTests {
        typealias Machine = TransferStateMachine

        static let etag = #""v1""#
        static let url = URL(string: "http://a.test/file")!

        static func head(_ status: Int, _ fields: (String, String)...) -> ResponseHead {
            ResponseHead(statusCode: status, httpVersion: "HTTP/1.1", fields: fields.map { (name: $0.0, value: $0.1) })
        }

        static func machine(_ configure: (inout Machine.Configuration) -> Void = { _ in },
                            validator: ResumeValidator? = nil, knownLength: Int64? = nil) -> Machine {
            var configuration = Machine.Configuration()
            configure(&configuration)
            return Machine(configuration: configuration, validator: validator, knownLength: knownLength)
        }

        /// A machine transferring, with `held` bytes of version `etag` already held.
        static func resuming(held: Int64, length: Int64 = 1000,
                             _ configure: (inout Machine.Configuration) -> Void = { _ in }) -> Machine {
            var machine = machine(configure, validator: .entityTag(etag), knownLength: length)
            let send = machine.begin(held: held)
            #expect(send == Machine.Send(rangeFrom: held, validator: .entityTag(etag), reason: .first))
            return machine
        }

        static func dropped() -> URLError { URLError(.networkConnectionLost) }

        /// Takes `count` bytes into the sink.
        static func body(_ machine: inout Machine, _ count: Int, admission: BodyWriter.Admission = .accepted) -> Machine.BodyAction {
            machine.bodyReceived(count: count) { admission }
        }

        // MARK: - A whole response

        @Test func aPlainGetGoesToTheSinkAndNamesTheVersionHeld() {
            var machine = Self.machine()
            #expect(machine.begin(held: 0) == Machine.Send(rangeFrom: nil, validator: nil, reason: .first))
            #expect(machine.phase == .transferring)
            let head = Self.head(200, ("ETag", Self.etag), ("Content-Length", "1000"))
            #expect(machine.headReceived(head) == .deliver(restartFromZero: false, newIdentity: true))
            #expect(machine.validator == .entityTag(Self.etag))
            #expect(machine.knownLength == 1000)
            #expect(machine.expectedLength == 1000)
            #expect(Self.body(&machine, 600) == .append)
            #expect(Self.body(&machine, 400) == .append)
            #expect(machine.held == 1000)
            #expect(machine.transferCompleted(error: nil) == .report(.success))
            #expect(machine.isFinished)
        }

        /// nginx passes an upstream's HTTP/0.9 reply on over HTTP/2 as `:status 009` (found by
        /// the fault matrix): no status outside the three digits 100–999 is a response.
        @Test(arguments: [0, 9, 99, 1000, 12345])
        func aStatusOutsideHTTPsRangeIsRefusedBeforeAByteIsKept(_ status: Int) {
            var machine = Self.machine()
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(Self.head(status, ("Content-Length", "5"))) == .abort)
            #expect(machine.transferCompleted(error: nil) == .report(.failure(.malformedStatus(status))))
            #expect(machine.held == 0)
        }

        /// An unknown three-digit status is an answer (RFC 9110 §15), and outside 2xx an error
        /// answer (issue 26: 999 aborted the request).
        @Test(arguments: [600, 799, 999])
        func anUnknownThreeDigitStatusIsAnErrorAnswer(_ status: Int) {
            var machine = Self.machine { $0.expectsHeads = true }
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(Self.head(status, ("Content-Length", "2"))) == .holdAside)
            #expect(Self.body(&machine, 2) == .divert)
            #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))
        }

        /// Body bytes, or a complete transfer, without an HTTP head before them: not HTTP
        /// (issue 26: `Http/1.1 500` was a success whose body was the error page).
        @Test func anAnswerWithoutAnHTTPHeadIsNotHTTP() {
            var body = Self.machine { $0.expectsHeads = true }
            _ = body.begin(held: 0)
            #expect(Self.body(&body, 15) == .abort)
            #expect(body.held == 0)
            #expect(body.transferCompleted(error: URLError(.cannotWriteToFile)) == .report(.failure(.notHTTP)))
            var empty = Self.machine { $0.expectsHeads = true }
            _ = empty.begin(held: 0)
            #expect(empty.transferCompleted(error: nil) == .report(.failure(.notHTTP)))
            // file: has no heads: its bytes are the body.
            var file = Self.machine()
            _ = file.begin(held: 0)
            #expect(Self.body(&file, 15) == .append)
            #expect(file.transferCompleted(error: nil) == .report(.success))
        }

        /// Differing `Content-Length` values are refused before a byte (RFC 9112 §6.3); the same
        /// value twice, or a `Transfer-Encoding` that overrides them, are not.
        @Test func conflictingContentLengthsAreRefused() {
            for fields in [[("Content-Length", "4, 10")], [("Content-Length", "4"), ("Content-Length", "10")],
                           [("Content-Length", "4, x")]] {
                var machine = Self.machine()
                _ = machine.begin(held: 0)
                #expect(machine.headReceived(ResponseHead(statusCode: 200, httpVersion: "HTTP/1.1",
                                                          fields: fields.map { (name: $0.0, value: $0.1) })) == .abort, "\(fields)")
                #expect(machine.transferCompleted(error: nil) == .report(.failure(.conflictingContentLength)))
            }
            for fields in [[("Content-Length", "4, 4")], [("Content-Length", "4"), ("Content-Length", "4")],
                           [("Content-Length", "4, 10"), ("Transfer-Encoding", "chunked")], [("Content-Length", "4")]] {
                var machine = Self.machine()
                _ = machine.begin(held: 0)
                #expect(machine.headReceived(ResponseHead(statusCode: 200, httpVersion: "HTTP/1.1",
                                                          fields: fields.map { (name: $0.0, value: $0.1) }))
                            == .deliver(restartFromZero: false, newIdentity: true), "\(fields)")
            }
        }

        /// RFC 9110 §13.1.5: a weak ETag is never sent, and rules out the date beside it; a date
        /// alone is the validator when it is a second or more before the `Date`.
        @Test func aWeakEntityTagIsNoValidatorAndRulesOutTheDate() {
            var machine = Self.machine()
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Self.head(200, ("ETag", #"W/"w""#), ("Last-Modified", "Sat, 21 Nov 2026 10:00:00 GMT"),
                                               ("Date", "Sat, 21 Nov 2026 11:00:00 GMT")))
            #expect(machine.validator == nil)
            #expect(!machine.heldVersionIsNamed)
            var dated = Self.machine()
            _ = dated.begin(held: 0)
            _ = dated.headReceived(Self.head(200, ("Last-Modified", "Sat, 21 Nov 2026 10:00:00 GMT"),
                                             ("Date", "Sat, 21 Nov 2026 11:00:00 GMT")))
            #expect(dated.validator == .lastModified("Sat, 21 Nov 2026 10:00:00 GMT"))
            #expect(dated.heldVersionIsNamed)
        }

        /// An error answer (a final status outside 2xx that nothing replaces) is never part
        /// of the bytes held: a file or stream gets none of its body, which is reported apart
        /// (before: a 503's body went into the file, and a later resume continued after it).
        @Test(arguments: [404, 503, 304, 302])
        func anErrorAnswerIsNeverPartOfTheBytesHeldOfAFile(_ status: Int) {
            var machine = Self.machine { $0.errorAnswerJoinsBody = false; $0.maximumRedirects = 0 }
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(Self.head(status, ("Content-Length", "5"))) == .holdAside)
            #expect(Self.body(&machine, 5) == .divert)
            #expect(machine.held == 0)
            #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: false)))
            #expect(machine.validator == nil)
        }

        /// In memory the error answer's body is the operation's body (the serializer reports
        /// it), but only once it is whole: it is held aside until then.
        @Test func anErrorAnswerInMemoryBecomesTheBodyOnlyAtTheEnd() {
            var machine = Self.machine()
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(Self.head(404, ("Content-Length", "5"))) == .holdAside)
            #expect(Self.body(&machine, 5) == .divert)
            #expect(machine.held == 0)
            #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))
        }

        /// A pause in the middle of an error answer resumes from the bytes held before it, not
        /// after the error page (before: `Range: bytes=<error page's length>-`, and the 206
        /// appended to the error page was a success).
        @Test func aPauseDuringAnErrorAnswerResumesFromTheBytesHeldBeforeIt() {
            var machine = Self.machine()
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Self.head(503, ("Content-Length", "100")))
            #expect(Self.body(&machine, 40) == .divert)
            #expect(machine.pause() == .paused(stopTransfer: true))
            #expect(machine.resume() == .send(Machine.Send(rangeFrom: nil, validator: nil, reason: .resume)))
        }

        /// A dropped error answer is not retried as a drop mid-body and leaves nothing held.
        @Test func aDroppedErrorAnswerFailsWithNothingHeld() {
            var machine = Self.machine { $0.errorAnswerJoinsBody = false }
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Self.head(408, ("Content-Length", "100")))
            #expect(Self.body(&machine, 40) == .divert)
            #expect(machine.transferCompleted(error: Self.dropped()) == .report(.failure(.transport(Self.dropped()))))
            #expect(machine.held == 0)
        }

        /// A write failed before a head arrived (its event still on its way): the head is
        /// refused and the transfer's completion is that write failure, whatever curl says.
        /// Before, the driver stopped the transfer from inside curl's header callback, and
        /// the process died on `CurlMulti.remove`'s precondition (found by the campaign's
        /// write-limited children).
        @Test func aWriteFailureKnownAtAHeadEndsTheTransferWithIt() {
            var machine = Self.machine()
            _ = machine.begin(held: 0)
            let full = URLError(.cannotWriteToFile)
            machine.writerFailedBeforeHead(full)
            #expect(machine.headReceived(Self.head(200)) == .abort)
            #expect(machine.transferCompleted(error: URLError(.cannotWriteToFile)) == .report(.failure(.write(full))))
        }

        /// A 206 whose body runs past the last byte its `Content-Range` names: the chunk that
        /// would cross it is refused before it is appended (before: 600 bytes appended for a
        /// range of 100, and "success" once held reached the length).
        @Test func aPartialBodyLongerThanItsContentRangeIsRefused() {
            var machine = Self.resuming(held: 400)
            let head = Self.head(206, ("Content-Range", "bytes 400-499/1000"), ("ETag", Self.etag))
            #expect(machine.headReceived(head) == .deliver(restartFromZero: false, newIdentity: false))
            #expect(Self.body(&machine, 100) == .append)
            #expect(Self.body(&machine, 1) == .abort)
            #expect(machine.held == 500)
            #expect(machine.transferCompleted(error: URLError(.cannotWriteToFile))
                        == .report(.failure(.resume(.bodyExceedsContentRange(last: 499)))))
        }

        /// A 416 is "already complete" only for the version held: a validator in it that names
        /// another version refuses it (before: 500 bytes of the old version were a complete
        /// download when no length was known, a server ignoring If-Range having changed it).
        @Test func a416NamingAnotherVersionIsNotComplete() {
            var machine = Self.machine(validator: .entityTag(Self.etag), knownLength: nil)
            _ = machine.begin(held: 500)
            let head = Self.head(416, ("Content-Range", "bytes */500"), ("ETag", #""v2""#))
            #expect(machine.headReceived(head) == .abort)
            #expect(machine.transferCompleted(error: nil) == .send(.init(rangeFrom: nil, validator: nil, reason: .retry)))
            #expect(machine.metrics.restartsFromZero == 0, "counted when the whole answer empties what is held")

            var same = Self.machine(validator: .entityTag(Self.etag), knownLength: nil)
            _ = same.begin(held: 500)
            _ = same.headReceived(Self.head(416, ("Content-Range", "bytes */500"), ("ETag", Self.etag)))
            #expect(same.transferCompleted(error: nil) == .report(.completeFromHeld))
        }

        /// An error body larger than may be held aside, for a file: its first bytes are kept
        /// for the error and the rest dropped, so the status is still the error (before the
        /// limit ended the download with `.provisionalBodyTooLarge` and no status).
        @Test func aLargeErrorBodyForAFileKeepsItsStatus() {
            var machine = Self.machine { $0.provisionalBodyLimit = 10; $0.maximumBodySize = nil; $0.errorAnswerJoinsBody = false }
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Self.head(500))
            #expect(Self.body(&machine, 10) == .divert)
            #expect(Self.body(&machine, 5) == .discard)
            #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: false)))
        }

        /// Paused and resumed before ``begin(held:)``: the resume only un-pauses, and begin
        /// sends the first request with the bytes held (a send before begin would have asked
        /// for the whole resource beside the 400 bytes of a continued file).
        @Test func aResumeBeforeTheTransferBeganLeavesTheFirstSendToBegin() {
            var machine = Self.machine(validator: .entityTag(Self.etag), knownLength: 1000)
            #expect(machine.pause() == .paused(stopTransfer: false))
            #expect(machine.resume() == .ignored)
            #expect(machine.phase == .idle)
            #expect(machine.begin(held: 400) == Machine.Send(rangeFrom: 400, validator: .entityTag(Self.etag), reason: .first))
        }

        /// An error body in memory may be as large as a memory body; for a file, as large as
        /// any body held aside.
        @Test func anErrorAnswerHeldAsideHasTheSinksLimit() {
            var memory = Self.machine { $0.provisionalBodyLimit = 10; $0.maximumBodySize = 100 }
            _ = memory.begin(held: 0)
            _ = memory.headReceived(Self.head(500))
            #expect(Self.body(&memory, 100) == .divert)
            #expect(Self.body(&memory, 1) == .abort)
            #expect(memory.transferCompleted(error: nil) == .report(.failure(.bodyTooLarge(limit: 100))))

            // A redirect body that may still be replaced keeps the aside limit.
            var file = Self.machine { $0.provisionalBodyLimit = 10; $0.maximumBodySize = nil; $0.errorAnswerJoinsBody = false }
            _ = file.begin(held: 0)
            _ = file.headReceived(Self.head(302, ("Location", "/x")))
            #expect(Self.body(&file, 10) == .divert)
            #expect(Self.body(&file, 1) == .abort)
            #expect(file.transferCompleted(error: nil) == .report(.failure(.provisionalBodyTooLarge(limit: 10))))
        }

        // MARK: - Several heads on one transfer (curl's own authentication round)

        @Test func eachHeadOfATransferIsJudgedOnItsOwn() {
            var machine = Self.resuming(held: 400)
            machine.credentialSent(true)
            #expect(machine.headReceived(Self.head(401, ("WWW-Authenticate", "Basic"))) == .holdAside)
            #expect(Self.body(&machine, 20) == .divert)
            let partial = Self.head(206, ("Content-Range", "bytes 400-999/1000"), ("ETag", Self.etag))
            #expect(machine.headReceived(partial) == .deliver(restartFromZero: false, newIdentity: false))
            #expect(machine.attempt.asideBytes == 0, "the 401's body is dropped")
            #expect(Self.body(&machine, 600) == .append)
            #expect(machine.transferCompleted(error: nil) == .report(.success))
            #expect(machine.held == 1000)
        }

        @Test func aChallengeBlockDoesNotHoldTheAnswerAfterCurlsOwnRound() {
            var machine = Self.machine { $0.answersChallenges = true }
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(Self.head(401)) == .holdAside)
            #expect(machine.headReceived(Self.head(200, ("Content-Length", "10"))) == .deliver(restartFromZero: false, newIdentity: true))
            #expect(Self.body(&machine, 10) == .append)
            #expect(machine.transferCompleted(error: nil) == .report(.success))
        }

        // MARK: - Range answers

        @Test func a206AtTheOffsetIsAppended() {
            var machine = Self.resuming(held: 400)
            let head = Self.head(206, ("Content-Range", "bytes 400-999/1000"), ("ETag", Self.etag))
            #expect(machine.headReceived(head) == .deliver(restartFromZero: false, newIdentity: false))
            #expect(machine.expectedLength == 1000)
            #expect(Self.body(&machine, 600) == .append)
            #expect(machine.transferCompleted(error: nil) == .report(.success))
        }

        @Test(arguments: [
            (head(206, ("Content-Range", "bytes 500-999/1000")), ResumeError.Reason.rangeStartMismatch(expected: 400, received: 500)),
            (head(206), .malformedContentRange(nil)),
        ])
        func aRangeAnswerThatDoesNotFitIsRefusedBeforeAByte(head: ResponseHead, reason: ResumeError.Reason) {
            var machine = Self.resuming(held: 400)
            #expect(machine.headReceived(head) == .abort)
            #expect(Self.body(&machine, 10) == .abort)
            #expect(machine.held == 400, "nothing appended")
            let curlSaysAborted = URLError(.cannotWriteToFile)
            #expect(machine.transferCompleted(error: curlSaysAborted) == .report(.failure(.resume(reason))))
        }

        /// A 206 of another version (a server that ignores `If-Range`): nothing appended, the
        /// whole resource asked for at once, which then empties what is held.
        @Test func a206OfAnotherVersionAsksForTheWholeResource() {
            var machine = Self.resuming(held: 400)
            let other = Self.head(206, ("Content-Range", "bytes 400-999/1000"), ("ETag", #""v2""#))
            #expect(machine.headReceived(other) == .abort)
            #expect(Self.body(&machine, 10) == .abort)
            #expect(machine.held == 400, "nothing appended")
            #expect(machine.transferCompleted(error: URLError(.cannotWriteToFile)) == .send(.init(rangeFrom: nil, validator: nil, reason: .retry)))
            #expect(machine.versionRestarts == 1)

            var restarting = Self.resuming(held: 400)
            _ = restarting.headReceived(other)
            _ = restarting.transferCompleted(error: URLError(.cannotWriteToFile))
            let whole = Self.head(200, ("ETag", #""v2""#), ("Content-Length", "1000"))
            #expect(restarting.headReceived(whole) == .deliver(restartFromZero: true, newIdentity: true))
            #expect(restarting.held == 0)
            #expect(restarting.metrics.restartsFromZero == 1)
            #expect(Self.body(&restarting, 1000) == .append)
            #expect(restarting.transferCompleted(error: nil) == .report(.success))
        }

        /// A server that changes its version on every answer and ignores `If-Range` is asked
        /// for the whole resource a bounded number of times; then the failure.
        @Test func aVersionThatNeverHoldsStillEnds() {
            var machine = Self.machine { $0.retryPolicy = RetryPolicy(maximumRetries: 10, initialDelay: 0) }
            _ = machine.begin(held: 0)
            var version = 1
            func whole() -> ResponseHead { Self.head(200, ("ETag", "\"v\(version)\""), ("Content-Length", "1000")) }
            _ = machine.headReceived(whole())
            _ = Self.body(&machine, 100)
            for round in 0...Machine.maximumVersionRestarts {
                #expect(machine.transferCompleted(error: URLError(.networkConnectionLost)) == .scheduleRetry(after: 0))
                #expect(machine.retryTimerFired()?.rangeFrom == 100, "round \(round)")
                version += 1
                let other = Self.head(206, ("Content-Range", "bytes 100-999/1000"), ("ETag", "\"v\(version)\""))
                #expect(machine.headReceived(other) == .abort)
                let completion = machine.transferCompleted(error: URLError(.cannotWriteToFile))
                guard round < Machine.maximumVersionRestarts else {
                    #expect(completion == .report(.failure(.resume(.validatorChanged(expected: "\"v\(version - 1)\"",
                                                                                   received: "\"v\(version)\"")))))
                    break
                }
                #expect(completion == .send(.init(rangeFrom: nil, validator: nil, reason: .retry)))
                version += 1
                #expect(machine.headReceived(whole()) == .deliver(restartFromZero: true, newIdentity: true))
                _ = Self.body(&machine, 100)
            }
        }

        /// Another version whose range answer does not fit either (a new length, a 416 for a
        /// shorter one, with or without a changed validator): asked for whole, never a failure
        /// the resume data would repeat (review of issue 38: `lengthChanged` and
        /// `unsatisfiableRange` were met before the validator).
        @Test(arguments: [
            head(206, ("Content-Range", "bytes 400-799/800"), ("ETag", #""v2""#)),
            head(206, ("Content-Range", "bytes 400-1999/2000")),
            head(416, ("Content-Range", "bytes */300"), ("ETag", #""v2""#)),
            head(416, ("Content-Range", "bytes */900")),
        ])
        func anotherVersionThatDoesNotFitIsAskedForWhole(head: ResponseHead) {
            var machine = Self.resuming(held: 400)
            #expect(machine.headReceived(head) == .abort)
            #expect(Self.body(&machine, 10) == .abort)
            #expect(machine.held == 400, "nothing appended")
            #expect(machine.transferCompleted(error: URLError(.cannotWriteToFile)) == .send(.init(rangeFrom: nil, validator: nil, reason: .retry)))
        }

        /// A 200 whose version has no strong validator: a drop after it asks for the whole
        /// resource again, never a `Range` (RFC 9110 §13.1.5).
        @Test(arguments: [[("ETag", #"W/"v1""#)], [("Last-Modified", "Sat, 21 Nov 2026 10:00:00 GMT")], []])
        func aVersionWithoutAStrongValidatorIsAskedForWhole(fields: [(String, String)]) {
            var machine = Self.machine { $0.retryPolicy = RetryPolicy(maximumRetries: 1, initialDelay: 0) }
            _ = machine.begin(held: 0)
            let head = ResponseHead(statusCode: 200, httpVersion: "HTTP/1.1",
                                    fields: (fields + [("Content-Length", "1000")]).map { (name: $0.0, value: $0.1) })
            #expect(machine.headReceived(head) == .deliver(restartFromZero: false, newIdentity: true))
            #expect(machine.validator == nil)
            #expect(Self.body(&machine, 400) == .append)
            #expect(machine.transferCompleted(error: URLError(.networkConnectionLost)) == .scheduleRetry(after: 0))
            #expect(machine.retryTimerFired() == .init(rangeFrom: nil, validator: nil, reason: .retry))
        }

        @Test func a200ToARangeRestartsFromZeroAndCountsIt() {
            var machine = Self.resuming(held: 400)
            let whole = Self.head(200, ("ETag", #""v2""#), ("Content-Length", "1200"))
            #expect(machine.headReceived(whole) == .deliver(restartFromZero: true, newIdentity: true))
            #expect(machine.held == 0)
            #expect(machine.validator == .entityTag(#""v2""#))
            #expect(machine.knownLength == 1200)
            #expect(machine.metrics.restartsFromZero == 1)
            #expect(machine.metrics.bytesRefetched == 400)
            #expect(Self.body(&machine, 1200) == .append)
            #expect(machine.transferCompleted(error: nil) == .report(.success))
        }

        @Test func a200ToARangeFailsWhenTheSinkCannotRestart() {
            var machine = Self.resuming(held: 400) { $0.canRestart = false }
            #expect(machine.headReceived(Self.head(200)) == .abort)
            #expect(machine.transferCompleted(error: URLError(.cannotWriteToFile))
                        == .report(.failure(.resume(.cannotRestartOutputStream))))
            #expect(machine.held == 400)
        }

        @Test func a416ForTheLengthHeldIsComplete() {
            var machine = Self.resuming(held: 1000)
            #expect(machine.headReceived(Self.head(416, ("Content-Range", "bytes */1000"))) == .holdAside)
            #expect(machine.transferCompleted(error: nil) == .report(.completeFromHeld))
        }

        @Test(arguments: [404, 500, 304, 301])
        func anErrorAnswerToARangeIsReportedApartFromTheBytesHeld(status: Int) {
            // 301 without a Location cannot be followed: it is an answer like any error.
            var machine = Self.resuming(held: 400)
            #expect(machine.headReceived(Self.head(status)) == .holdAside)
            #expect(Self.body(&machine, 50) == .divert)
            #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: false)))
            #expect(machine.held == 400)
        }

        @Test func aRedirectOfARangeIsFollowedWithTheSameRange() {
            var machine = Self.resuming(held: 400)
            #expect(machine.headReceived(Self.head(302, ("Location", "/elsewhere"))) == .holdAside)
            #expect(machine.transferCompleted(error: nil) == .redirect)
            #expect(machine.decided(proceed: true)
                        == .send(Machine.Send(rangeFrom: 400, validator: .entityTag(Self.etag), reason: .redirect)))
        }

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
            #expect(machine.held == 11)
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
            #expect(growing.held == 1000)
        }

        @Test func aFullWriterHoldsTheChunkUntilItCatchesUp() {
            var machine = Self.machine()
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Self.head(200))
            #expect(Self.body(&machine, 10, admission: .wait) == .wait)
            #expect(machine.held == 0)
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
}
