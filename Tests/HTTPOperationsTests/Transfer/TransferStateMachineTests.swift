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
            #expect(machine.held.validator == .entityTag(Self.etag))
            #expect(machine.held.knownLength == 1000)
            #expect(machine.held.expectedLength == 1000)
            #expect(Self.body(&machine, 600) == .append)
            #expect(Self.body(&machine, 400) == .append)
            #expect(machine.held.count == 1000)
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
            #expect(machine.held.count == 0)
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
            #expect(body.held.count == 0)
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
            #expect(machine.held.validator == nil)
            #expect(!machine.held.isNamed)
            var dated = Self.machine()
            _ = dated.begin(held: 0)
            _ = dated.headReceived(Self.head(200, ("Last-Modified", "Sat, 21 Nov 2026 10:00:00 GMT"),
                                             ("Date", "Sat, 21 Nov 2026 11:00:00 GMT")))
            #expect(dated.held.validator == .lastModified("Sat, 21 Nov 2026 10:00:00 GMT"))
            #expect(dated.held.isNamed)
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
            #expect(machine.held.count == 0)
            #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: false)))
            #expect(machine.held.validator == nil)
        }

        /// In memory the error answer's body is the operation's body (the serializer reports
        /// it), but only once it is whole: it is held aside until then.
        @Test func anErrorAnswerInMemoryBecomesTheBodyOnlyAtTheEnd() {
            var machine = Self.machine()
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(Self.head(404, ("Content-Length", "5"))) == .holdAside)
            #expect(Self.body(&machine, 5) == .divert)
            #expect(machine.held.count == 0)
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
            #expect(machine.held.count == 0)
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
            #expect(machine.held.count == 500)
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
    }
}
