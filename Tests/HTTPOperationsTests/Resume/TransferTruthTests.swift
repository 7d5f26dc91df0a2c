import Foundation
@testable import HTTPOperations
import Synchronization
import Testing

extension AllTests {
    /// The decisions of issue 24 ("never a wrong byte called success") as transitions of
    /// ``TransferStateMachine``, without a socket: what was sent decides how an answer is
    /// read, success needs every byte of the known length, both validators are checked on a
    /// 206, and a writer's failure is an event.
    @Suite struct TransferTruthTests {
        typealias Machine = TransferStateMachine
        typealias Fixture = TransferStateMachineTests

        static let etag = Fixture.etag
        static let date = "Sat, 21 Nov 2026 10:00:00 GMT"

        // MARK: - What was sent decides

        /// A proxy's "200 Connection established" read as the answer to a resume restarted the
        /// body; the origin's 206 that followed on the same transfer was then written at 0.
        /// A 206 is only ever read against the range that was sent.
        @Test func aPartialAnswerAfterARestartOnTheSameTransferIsRefused() {
            var machine = Fixture.resuming(held: 400)
            #expect(machine.headReceived(Fixture.head(200, ("Content-Length", "1000"))) == .deliver(restartFromZero: true, newIdentity: true))
            let partial = Fixture.head(206, ("Content-Range", "bytes 400-999/1000"), ("ETag", Self.etag))
            #expect(machine.headReceived(partial) == .abort)
            #expect(machine.transferCompleted(error: URLError(.cancelled)) == .report(.failure(.resume(.unrequestedPartialContent))))
        }

        /// Resume data names version "v1", the file is still empty (killed before its first
        /// write), and the whole answer is a 203 (a transforming proxy's) of 400 bytes, cut.
        /// Those bytes are no "v1": they must never be continued with `If-Range: "v1"` (the
        /// origin's 206 would be spliced onto them), in this process or from the resume data
        /// saved for them. The validator, the version's length and the name go.
        @Test func aWholeAnswerOtherThan200NamesNoVersion() {
            var machine = Fixture.machine(validator: .entityTag(Self.etag), knownLength: 1000)
            #expect(machine.begin(held: 0) == Machine.Send(rangeFrom: nil, validator: nil, reason: .first))
            // A new identity: the resume data saved for the old version is replaced at once.
            #expect(machine.headReceived(Fixture.head(203, ("Content-Length", "400"))) == .deliver(restartFromZero: false, newIdentity: true))
            #expect(Fixture.body(&machine, 400) == .append)
            #expect(machine.held.validator == nil && machine.held.entityTag == nil && machine.held.knownLength == nil)
            #expect(machine.held.rangeStart(sendsOwnRange: false) == nil, "400 bytes of a 203 would be continued as \(Self.etag)")
        }

        @Test func aPartialAnswerToARequestThatAskedForNoRangeIsRefused() {
            var machine = Fixture.machine()
            _ = machine.begin(held: 0)
            #expect(machine.headReceived(Fixture.head(206, ("Content-Range", "bytes 0-99/1000"))) == .abort)
            #expect(machine.transferCompleted(error: nil) == .report(.failure(.resume(.unrequestedPartialContent))))
            #expect(machine.held.count == 0)
        }

        /// The caller's own `Range: bytes=0-99`: the 206 is the body, and nothing is added.
        @Test func theCallersOwnRangeIsItsAnswer() {
            var machine = Fixture.machine { $0.sendsOwnRange = true }
            #expect(machine.begin(held: 0) == Machine.Send(rangeFrom: nil, validator: nil, reason: .first))
            let partial = Fixture.head(206, ("Content-Range", "bytes 0-99/1000"), ("Content-Length", "100"))
            #expect(machine.headReceived(partial) == .deliver(restartFromZero: false, newIdentity: false))
            #expect(Fixture.body(&machine, 100) == .append)
            #expect(machine.transferCompleted(error: nil) == .report(.success))
        }

        /// Sent again after a pause, the caller's range is asked again whole: what is held
        /// goes first, never a `Range` of the machine's own on top of the caller's.
        @Test func theCallersOwnRangeAskedAgainStartsTheBodyAgain() {
            var machine = Fixture.machine { $0.sendsOwnRange = true }
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Fixture.head(206, ("Content-Range", "bytes 0-99/1000"), ("Content-Length", "100")))
            _ = Fixture.body(&machine, 60)
            #expect(machine.pause() == .paused(stopTransfer: true))
            #expect(machine.resume() == .send(Machine.Send(rangeFrom: nil, validator: nil, reason: .resume)))
            let again = Fixture.head(206, ("Content-Range", "bytes 0-99/1000"), ("Content-Length", "100"))
            #expect(machine.headReceived(again) == .deliver(restartFromZero: true, newIdentity: false))
            #expect(machine.held.count == 0)
        }

        // MARK: - Success needs every byte

        /// `Content-Range: bytes 400-499/1000` in answer to `bytes=400-` (a CDN's cap): the
        /// rest is asked for at once, and only all 1,000 bytes are a success.
        @Test func aShortPartialAnswerAsksForTheRest() {
            var machine = Fixture.resuming(held: 400)
            #expect(machine.headReceived(Fixture.head(206, ("Content-Range", "bytes 400-499/1000"))) == .deliver(restartFromZero: false, newIdentity: false))
            #expect(Fixture.body(&machine, 100) == .append)
            #expect(machine.transferCompleted(error: nil) == .send(Machine.Send(rangeFrom: 500, validator: .entityTag(Self.etag), reason: .resume)))
            #expect(machine.headReceived(Fixture.head(206, ("Content-Range", "bytes 500-999/1000"))) == .deliver(restartFromZero: false, newIdentity: false))
            #expect(Fixture.body(&machine, 500) == .append)
            #expect(machine.transferCompleted(error: nil) == .report(.success))
            #expect(machine.held.count == 1000)
            #expect(machine.metrics.automaticResumes == 1)
        }

        /// With no request allowed after the first, a short answer fails, typed, with the
        /// bytes held named (never a success with 500 of 1,000 bytes).
        @Test func aShortPartialAnswerFailsWhenNoFurtherRequestIsAllowed() {
            var machine = Fixture.resuming(held: 400) { $0.retryPolicy = .none }
            _ = machine.headReceived(Fixture.head(206, ("Content-Range", "bytes 400-499/1000")))
            _ = Fixture.body(&machine, 100)
            #expect(machine.transferCompleted(error: nil) == .report(.failure(.resume(.incomplete(held: 500, length: 1000)))))
        }

        /// A short answer that added nothing is a retry with its wait, within the policy; so
        /// a server that never sends the rest ends.
        @Test func aShortAnswerThatAddedNothingIsRetriedWithinThePolicy() {
            var machine = Fixture.machine { $0.retryPolicy = RetryPolicy(maximumRetries: 1, initialDelay: 0.1) }
            machine.random = { 0.5 }
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Fixture.head(200, ("Content-Length", "1000"), ("ETag", Self.etag)))
            // curl would report a short 200 as a transport error; a 200 with no body bytes
            // that curl accepted (it trusted a HEAD-like answer) is the shortest case.
            guard case .scheduleRetry = machine.transferCompleted(error: nil) else {
                Issue.record("a 200 with none of its 1,000 bytes must not end the transfer")
                return
            }
            #expect(machine.retryTimerFired() == Machine.Send(rangeFrom: nil, validator: nil, reason: .retry))
            _ = machine.headReceived(Fixture.head(200, ("Content-Length", "1000"), ("ETag", Self.etag)))
            #expect(machine.transferCompleted(error: nil) == .report(.failure(.resume(.incomplete(held: 0, length: 1000)))))
        }

        @Test func aHeadRequestNeedsNoBody() {
            var machine = Fixture.machine { $0.expectsBody = false }
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Fixture.head(200, ("Content-Length", "1000")))
            #expect(machine.transferCompleted(error: nil) == .report(.success))
        }

        // MARK: - Both validators

        /// The held bytes came with a strong ETag *and* a Last-Modified; a server that ignores
        /// If-Range answers a 206 of the new version, with the same ETag scheme but another
        /// date (or the other way round): refused either way.
        @Test(arguments: [
            (("ETag", #""v2""#), "ETag differs"),
            (("Last-Modified", "Sun, 22 Nov 2026 10:00:00 GMT"), "Last-Modified differs"),
        ])
        func aPartialAnswerOfAnotherVersionIsRefused(field: (String, String), _ why: String) {
            var machine = Machine(configuration: .init(), validator: .entityTag(Self.etag), entityTag: Self.etag,
                                  lastModified: Self.date, knownLength: 1000)
            _ = machine.begin(held: 400)
            var fields = [("Content-Range", "bytes 400-999/1000"), ("ETag", Self.etag), ("Last-Modified", Self.date)]
            fields.removeAll { $0.0 == field.0 }
            fields.append(field)
            let head = ResponseHead(statusCode: 206, httpVersion: "HTTP/1.1", fields: fields.map { (name: $0.0, value: $0.1) })
            #expect(machine.headReceived(head) == .abort, "\(why)")
            #expect(machine.held.count == 400)
        }

        /// Only a Last-Modified named the version (no ETag): it is still checked on the 206.
        @Test func aDateValidatorIsCheckedOnEveryPartialAnswer() {
            var machine = Machine(configuration: .init(), validator: .lastModified(Self.date), knownLength: 1000)
            _ = machine.begin(held: 400)
            let later = Fixture.head(206, ("Content-Range", "bytes 400-999/1000"), ("Last-Modified", "Sun, 22 Nov 2026 10:00:00 GMT"))
            #expect(machine.headReceived(later) == .abort)
            // Another version: asked for whole, at once, never a failure the resume data
            // would repeat.
            #expect(machine.transferCompleted(error: URLError(.cancelled)) == .send(.init(rangeFrom: nil, validator: nil, reason: .retry)))
            #expect(machine.held.count == 400)

            // Where the bytes held cannot be dropped (a caller's stream): the failure.
            var stream = Machine(configuration: .init(canRestart: false), validator: .lastModified(Self.date), knownLength: 1000)
            _ = stream.begin(held: 400)
            #expect(stream.headReceived(later) == .abort)
            #expect(stream.transferCompleted(error: URLError(.cancelled))
                    == .report(.failure(.resume(.validatorChanged(expected: Self.date, received: "Sun, 22 Nov 2026 10:00:00 GMT")))))
        }

        /// A 200 names both validators of what will be held.
        @Test func aWholeAnswerNamesBothValidators() {
            var machine = Fixture.machine()
            _ = machine.begin(held: 0)
            _ = machine.headReceived(Fixture.head(200, ("ETag", Self.etag), ("Last-Modified", Self.date), ("Content-Length", "10")))
            #expect(machine.held.validator == .entityTag(Self.etag))
            #expect(machine.held.entityTag == Self.etag)
            #expect(machine.held.lastModified == Self.date)
        }

        // MARK: - The writer's failure is an event

        @Test(arguments: ["transferring", "paused", "waitingToRetry"])
        func aWriterFailureEndsTheDownloadWhateverItIsDoing(_ where: String) {
            var machine = Fixture.resuming(held: 400) { $0.retryPolicy = RetryPolicy(maximumRetries: 2, initialDelay: 0.1) }
            _ = machine.headReceived(Fixture.head(206, ("Content-Range", "bytes 400-999/1000")))
            switch `where` {
            case "paused": _ = machine.pause()
            case "waitingToRetry": _ = machine.transferCompleted(error: URLError(.networkConnectionLost))
            default: break
            }
            let error = URLError(.cannotWriteToFile)
            #expect(machine.writerFailed(error) == .failure(.write(error)))
            #expect(machine.isFinished)
            #expect(machine.writerFailed(error) == nil)
            #expect(machine.resume() == .ignored)
        }

        /// A failed write, then a restart from zero (a 200 to the resume): the emptying is
        /// skipped after the failure, so the file still holds the old version's bytes, and
        /// resume data naming the new version must not be published or saved (before, the
        /// new validator was saved beside the old prefix: a later run appended the new
        /// version to it and called it a success).
        @Test func afterAFailedWriteTheFileIsNotTheNewVersion() async throws {
            let file = temporaryFile()
            defer { removeDownload(file) }
            try Data(repeating: 7, count: 100).write(to: file)
            // Read-only: every write fails (EBADF), as a full disk's would.
            let handle = try FileHandle(forReadingFrom: file)
            let failures = Mutex<[URLError]>([])
            let writer = BodyWriter(target: .file(handle, file), queue: DispatchQueue(label: "writer"), alreadyWritten: 100,
                                    roomAvailable: {}, failed: { error in failures.withLock { $0.append(error) } })
            Data(repeating: 1, count: 10).withUnsafeBytes { writer.append($0) }
            writer.handOver()
            writer.discardAndEmpty()
            let written = try await writtenState(after: writer)
            #expect(written.holdsCurrentVersion == false)
            #expect(written.bytes == 100)
            #expect(failures.withLock { $0.count } == 1, "the failure is reported once, as an event")
            #expect(try Data(contentsOf: file) == Data(repeating: 7, count: 100))
        }

        /// The emptying at open (a download that does not continue the file's bytes) fails:
        /// the file still holds the old bytes, so the writer must not say it holds the current
        /// version at offset 0 (before, it did, and the sidecar saved then named the new
        /// version beside the old bytes: the next run appended the new version to them).
        @Test func aFailedFirstEmptyingLeavesTheFileNotTheNewVersion() async throws {
            let file = temporaryFile()
            defer { removeDownload(file) }
            try Data(repeating: 7, count: 100).write(to: file)
            // Read-only: ftruncate(2) fails (EINVAL), as it does for a sealed or special file.
            let handle = try FileHandle(forReadingFrom: file)
            let failures = Mutex<[URLError]>([])
            let writer = BodyWriter(target: .file(handle, file), queue: DispatchQueue(label: "writer"), emptyFirst: true,
                                    roomAvailable: {}, failed: { error in failures.withLock { $0.append(error) } })
            let written = try await writtenState(after: writer)
            #expect(written.holdsCurrentVersion == false, "the old bytes are not the new version")
            #expect(failures.withLock { $0.count } == 1, "the failure is reported once, as an event")
            #expect(try Data(contentsOf: file) == Data(repeating: 7, count: 100))
        }

        @Test func aWriterThatEmptiedHoldsTheCurrentVersion() async throws {
            let file = temporaryFile()
            defer { removeDownload(file) }
            try Data(repeating: 7, count: 100).write(to: file)
            let handle = try FileHandle(forUpdating: file)
            _ = try handle.seekToEnd()
            let writer = BodyWriter(target: .file(handle, file), queue: DispatchQueue(label: "writer"), alreadyWritten: 100,
                                    roomAvailable: {})
            writer.discardAndEmpty()
            Data(repeating: 1, count: 10).withUnsafeBytes { writer.append($0) }
            writer.handOver()
            let written = try await writtenState(after: writer)
            #expect(written.holdsCurrentVersion == true)
            #expect(written.bytes == 10)
        }

        /// What the writer's target holds once every write and emptying handed in before ran.
        private func writtenState(after writer: BodyWriter) async throws -> BodyWriter.Written {
            let written = Mutex<BodyWriter.Written?>(nil)
            let done = TestSignal("after writes")
            writer.afterWrites { state in
                written.withLock { $0 = state }
                done.fire()
            }
            try await done.wait(timeout: .seconds(5))
            return try #require(written.withLock { $0 })
        }
    }
}
