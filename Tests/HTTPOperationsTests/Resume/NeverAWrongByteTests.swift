import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Logging
import Synchronization
import Testing

extension AllTests {
    /// The defects of issue 24, each against a real server: a download is every byte of one
    /// version, or a typed error whose resume state can still be trusted. Each test failed
    /// before its fix (the closing note of the issue says how).
    @Suite struct NeverAWrongByte {
        static let size = 100_000
        static let etag = #""v0-100000""#

        /// The first `count` bytes of version 0 in a new file, with the resume data a paused
        /// download would have saved beside it.
        private func partialDownload(count: Int, url: URL, validator: ResumeValidator? = .entityTag(etag)) throws -> URL {
            let file = temporaryFile()
            try ResumableOptions.content(version: 0, count: count).write(to: file)
            let saved = ResumeData(url: url, validator: validator, offset: Int64(count), expectedLength: Int64(Self.size),
                                   destination: file)
            try saved.encoded().write(to: ResumeData.sidecarURL(for: file))
            return file
        }

        private func savedResumeData(beside file: URL) -> ResumeData? {
            (try? Data(contentsOf: ResumeData.sidecarURL(for: file))).flatMap { try? ResumeData(from: $0) }
        }

        private func resumed(_ file: URL, url: URL, retries: RetryPolicy = RetryPolicy(maximumRetries: 3, initialDelay: 0.01))
            -> HTTPRequestOperation {
            let (op, resumingFrom) = HTTPRequestOperation.download(URLRequest(url: url), to: file)
            #expect(resumingFrom != nil, "the sidecar must be followed")
            op.retryPolicy = retries
            return op
        }

        // MARK: - Short answers

        /// `Content-Range: bytes 40000-49999/100000` to `bytes=40000-`: the rest is asked for
        /// until every byte is held (before: "success" with 50,000 of 100,000 bytes).
        @Test func aCappedPartialAnswerIsContinuedToTheEnd() async throws {
            var options = ResumableOptions()
            options.rangeCap = 10_000
            let url = testServer.url(.resumable(size: Self.size, options: options))
            let file = try partialDownload(count: 40_000, url: url)
            defer { removeDownload(file) }
            let op = resumed(file, url: url)
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(outcome.error.map { "\($0)" } ?? "")")
            let body = try Data(contentsOf: file)
            #expect(body.count == Self.size)
            #expect(body == ResumableOptions.content(version: 0, count: Self.size))
            #expect(testServer.requestCount(forResumableKey: options.key) == 6)
            #expect(savedResumeData(beside: file) == nil)
        }

        /// With no further request allowed, a capped answer is a typed failure that keeps
        /// the bytes held and names them in its resume data.
        @Test func aCappedPartialAnswerWithNoRetriesFailsAndKeepsItsResumeData() async throws {
            var options = ResumableOptions()
            options.rangeCap = 10_000
            let url = testServer.url(.resumable(size: Self.size, options: options))
            let file = try partialDownload(count: 40_000, url: url)
            defer { removeDownload(file) }
            let op = resumed(file, url: url, retries: .none)
            let outcome = try await run(op)
            let error = try #require(outcome.error as? ResumeError, "\(String(describing: outcome.error))")
            #expect(error.reason == .incomplete(held: 50_000, length: Int64(Self.size)))
            #expect(try Data(contentsOf: file) == ResumableOptions.content(version: 0, count: 50_000))
            let saved = try #require(savedResumeData(beside: file))
            #expect(saved.offset == 50_000)
            #expect(saved.validator == .entityTag(Self.etag))
            #expect(op.resumeData?.offset == 50_000)
        }

        // MARK: - Error answers to a resume

        /// A 500 to the range: the real status is the error (not an integrity error on the
        /// partial file), and the sidecar and `resumeData` stay, so the next run continues.
        @Test func anErrorAnswerToAResumeKeepsTheResumeStateAndItsStatus() async throws {
            var options = ResumableOptions()
            options.rangeStatus = 500
            let url = testServer.url(.resumable(size: Self.size, options: options))
            let file = try partialDownload(count: 40_000, url: url)
            defer { removeDownload(file) }
            let op = resumed(file, url: url, retries: .none)
            op.expectedSHA256 = sha256(ResumableOptions.content(version: 0, count: Self.size))
            let outcome = try await run(op)
            #expect((outcome.error as? ResponseValidationError)?.statusCode == 500, "\(String(describing: outcome.error))")
            #expect(try Data(contentsOf: file) == ResumableOptions.content(version: 0, count: 40_000))
            #expect(savedResumeData(beside: file)?.offset == 40_000)
            #expect(op.resumeData?.offset == 40_000)
            #expect(HTTPRequestOperation.download(URLRequest(url: url), to: file).resumingFrom != nil)
        }

        // MARK: - Error answers to a first request

        /// A 503 to a download to a file, dropped in the middle of its body, then the same
        /// download again from its sidecar (found by the resume campaign, scenario 1050 of
        /// seed 7361077317623012109). Before: the error page went into the file and the
        /// sidecar named its length, so the next run asked for the bytes after it and spliced
        /// the resource onto the error page ("success"). Now the file never holds the error
        /// page: the second run gets the whole resource from byte 0.
        @Test func anErrorAnswerNeverReachesTheFileNorItsResumeState() async throws {
            let server = try AdversarialResumeServer.start()
            defer { server.stop() }
            let dropped = AdversarialStep.Drop(beforeHead: false, bodyFraction: 0.5, reset: false)
            let resource = AdversarialResource(key: "error-then-range", entityTag: .strong, sendsLastModified: false,
                                               length: 50_000, contentSeed: 1050,
                                               script: [AdversarialStep(answer: .status(503), drop: dropped)], rangeScript: [])
            server.register(resource)
            let url = URL(string: "http://127.0.0.1:\(server.port)\(AdversarialResumeServer.path(of: resource.key))")!
            let file = temporaryFile()
            defer { removeDownload(file) }

            let first = HTTPRequestOperation.download(URLRequest(url: url), to: file).operation
            first.retryPolicy = .none
            let failed = try await run(first)
            #expect((failed.error as? URLError)?.code == .networkConnectionLost, "\(String(describing: failed.error))")
            #expect((try? Data(contentsOf: file))?.count ?? 0 == 0, "the error page must not be in the file")
            #expect((first.resumeData?.offset ?? 0) == 0)

            let second = HTTPRequestOperation.download(URLRequest(url: url), to: file).operation
            let outcome = try await run(second)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(try Data(contentsOf: file) == Data(server.versions(of: resource.key)[0].content))
            #expect(server.log(of: resource.key).allSatisfy { $0.contains("Range: -") }, "\(server.log(of: resource.key))")
        }

        /// A whole 404 to a download to a file: the status is the error and its body is the
        /// operation's `responseData`; the file is left empty and no sidecar names it.
        @Test func aNotFoundAnswerToAFileDownloadLeavesTheFileEmpty() async throws {
            let file = temporaryFile()
            defer { removeDownload(file) }
            let op = HTTPRequestOperation.download(URLRequest(url: testServer.url(.jsonStatus(404))), to: file).operation
            let outcome = try await run(op)
            #expect((outcome.error as? ResponseValidationError)?.statusCode == 404, "\(String(describing: outcome.error))")
            #expect(String(decoding: op.responseData ?? Data(), as: UTF8.self).contains("error 404 explained"))
            #expect((try? Data(contentsOf: file))?.count ?? 0 == 0)
            #expect(savedResumeData(beside: file) == nil)
        }

        /// A 203 (another 2xx) answering the automatic resume after a drop: a typed failure
        /// with the partial file and its resume data kept (found by review: before, the
        /// operation succeeded with 30,000 of 100,000 bytes in the file and no integrity
        /// check ran).
        @Test func anotherSuccessStatusToAResumeIsAFailure() async throws {
            var options = ResumableOptions()
            options.dropAfter = 30_000
            options.rangeStatus = 203
            let url = testServer.url(.resumable(size: Self.size, options: options))
            let file = temporaryFile()
            defer { removeDownload(file) }
            let op = HTTPRequestOperation.download(URLRequest(url: url), to: file).operation
            op.retryPolicy = RetryPolicy(maximumRetries: 3, initialDelay: 0.01)
            op.expectedSHA256 = sha256(ResumableOptions.content(version: 0, count: Self.size))
            let outcome = try await run(op)
            #expect((outcome.error as? ResumeError)?.reason == .unexpectedStatus(203), "\(String(describing: outcome.error))")
            let held = try Data(contentsOf: file)
            #expect(held == ResumableOptions.content(version: 0, count: held.count) && held.count < Self.size)
            #expect(savedResumeData(beside: file)?.offset == Int64(held.count))
        }

        /// A byte-range request of the caller's own (`Range: bytes=100-`) dropped mid-body
        /// leaves no resume data: its bytes start at 100, and resume data would have a later
        /// run append `bytes=<held>-` of the resource after them (found by review: a spliced
        /// "success").
        @Test func aByteRangeDownloadLeavesNoResumeStateToSpliceFrom() async throws {
            var options = ResumableOptions()
            options.dropAfter = 30_000
            let url = testServer.url(.resumable(size: Self.size, options: options))
            let file = temporaryFile()
            defer { removeDownload(file) }
            var request = URLRequest(url: url)
            request.setValue("bytes=100-", forHTTPHeaderField: "Range")
            let op = HTTPRequestOperation.download(request, to: file).operation
            op.retryPolicy = .none
            let outcome = try await run(op)
            #expect(outcome.error != nil)
            #expect(op.resumeData == nil)
            #expect(savedResumeData(beside: file) == nil)
        }

        // MARK: - Both validators

        /// Only a Last-Modified names the version; the server ignores If-Range and answers a
        /// 206 of the next version (same length): nothing of it is appended, and the resource
        /// is asked for whole (before: spliced and called a success; then a `validatorChanged`
        /// failure that every later attempt met again).
        @Test func aServerIgnoringIfRangeCannotSpliceAVersionNamedByItsDate() async throws {
            var options = ResumableOptions()
            options.etag = .none
            options.lastModified = true
            options.changeEachRequest = true
            options.ignoreIfRange = true
            let url = testServer.url(.resumable(size: Self.size, options: options))
            // Version 0's date, as a first download saw it; the server is at version 1 next.
            #expect(try await run(HTTPRequestOperation(request: URLRequest(url: url))).error == nil)
            let file = try partialDownload(count: 40_000, url: url, validator: .lastModified("Sat, 21 Nov 2026 10:00:00 GMT"))
            defer { removeDownload(file) }
            let op = resumed(file, url: url, retries: .none)
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            // The third answer of the server (first download, the refused 206, the whole): version 2.
            #expect(try Data(contentsOf: file) == ResumableOptions.content(version: 2, count: Self.size))
            #expect(op.downloadMetrics.restartsFromZero == 1)
        }

        // MARK: - The caller's own range

        /// `Range: bytes=0-99` is the caller's: sent, and its 206 is the answer (before: the
        /// header was removed and the whole resource came).
        @Test(arguments: [false, true])
        func theCallersOwnRangeIsSentAndItsAnswerIsTheBody(toFile: Bool) async throws {
            let options = ResumableOptions()
            var request = URLRequest(url: testServer.url(.resumable(size: Self.size, options: options)))
            request.setValue("bytes=100-199", forHTTPHeaderField: "Range")
            let op = HTTPRequestOperation(request: request)
            let file = temporaryFile()
            defer { removeDownload(file) }
            if toFile { op.destinationURL = file }
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(op.response?.statusCode == 206)
            let body = toFile ? try Data(contentsOf: file) : try #require(outcome.data)
            #expect(body == ResumableOptions.content(version: 0, offset: 100, count: 100))
        }

        // MARK: - Where resume data leads

        /// A download behind a redirect, dropped midway: its sidecar names the URL asked for,
        /// so the same call continues it (before: it named the redirect's target, and the next
        /// run emptied the file and started at 0).
        @Test func aRedirectedDownloadContinuesFromItsSidecar() async throws {
            var options = ResumableOptions()
            options.dropAfter = 30_000
            let target = testServer.url(.resumable(size: Self.size, options: options))
            let url = testServer.url(.redirectTo(target.absoluteString, status: 302))
            let file = temporaryFile()
            defer { removeDownload(file) }
            let first = HTTPRequestOperation.download(URLRequest(url: url), to: file).operation
            first.retryPolicy = .none
            #expect(try await run(first).error != nil)
            #expect(savedResumeData(beside: file)?.url == url)
            let op = resumed(file, url: url)
            #expect(try await run(op).error == nil)
            #expect(try Data(contentsOf: file) == ResumableOptions.content(version: 0, count: Self.size))
            #expect(op.downloadMetrics.resumes == 1)
            #expect(op.downloadMetrics.restartsFromZero == 0)
        }

        /// A pre-signed URL whose signature changed between runs continues (strong ETag and
        /// known length: If-Range and every 206 are checked against them).
        @Test func aPreSignedURLWhoseQueryChangedContinues() async throws {
            var options = ResumableOptions()
            options.dropAfter = 30_000
            let base = testServer.url(.resumable(size: Self.size, options: options)).absoluteString
            let file = temporaryFile()
            defer { removeDownload(file) }
            let first = HTTPRequestOperation.download(URLRequest(url: URL(string: base + "&signature=first")!), to: file).operation
            first.retryPolicy = .none
            #expect(try await run(first).error != nil)
            let op = resumed(file, url: URL(string: base + "&signature=second")!)
            #expect(try await run(op).error == nil)
            #expect(try Data(contentsOf: file) == ResumableOptions.content(version: 0, count: Self.size))
            #expect(op.downloadMetrics.restartsFromZero == 0)
        }

        /// Without a strong ETag another query may be another resource: not followed.
        @Test func aChangedQueryWithoutAStrongValidatorIsNotFollowed() throws {
            let url = URL(string: "http://a.test/file?id=1")!
            let saved = ResumeData(url: url, validator: .lastModified("Sat, 21 Nov 2026 10:00:00 GMT"), offset: 10,
                                   expectedLength: 100, destination: nil)
            #expect(!saved.continues(URL(string: "http://a.test/file?id=2")!))
            #expect(saved.continues(url))
            let tagged = ResumeData(url: url, validator: .entityTag(Self.etag), offset: 10, expectedLength: 100, destination: nil)
            #expect(tagged.continues(URL(string: "http://a.test/file?id=2")!))
            #expect(!tagged.continues(URL(string: "http://a.test/other?id=1")!))
        }

        /// Resume data as the previous release wrote it (no entityTag/lastModified fields)
        /// is still read and followed.
        @Test func resumeDataFromThePreviousReleaseStillContinues() async throws {
            let options = ResumableOptions()
            let url = testServer.url(.resumable(size: Self.size, options: options))
            let file = temporaryFile()
            defer { removeDownload(file) }
            try ResumableOptions.content(version: 0, count: 40_000).write(to: file)
            let old = """
            {"destination":"\(file.absoluteString)","expectedLength":100000,"headers":{},"method":"GET","offset":40000,\
            "url":"\(url.absoluteString)","validator":{"entityTag":"\\"v0-100000\\""},"version":1}
            """
            try Data(old.utf8).write(to: ResumeData.sidecarURL(for: file))
            let op = resumed(file, url: url)
            #expect(try await run(op).error == nil)
            #expect(try Data(contentsOf: file) == ResumableOptions.content(version: 0, count: Self.size))
            #expect(op.downloadMetrics.restartsFromZero == 0)
        }

        // MARK: - Pause and the outcome

        /// An operation that pauses and resumes itself while its request is prepared, before
        /// its transfer exists (before: it hung for good, paused by the pending completion).
        final class PausesWhilePreparing: HTTPRequestOperation, @unchecked Sendable {
            let paused = TestSignal("pause completion")

            override func prepareRequest() throws -> URLRequest? {
                pause { self.paused.fire() }
                resume()
                return nil
            }
        }

        @Test func pauseThenResumeBeforeTheTransferExistsFinishes() async throws {
            let op = PausesWhilePreparing(request: URLRequest(url: testServer.url(.resumable(size: Self.size, options: ResumableOptions()))))
            let outcome = try await run(op, timeout: .seconds(10))
            #expect(outcome.error == nil)
            try await op.paused.wait(timeout: .seconds(5))
            #expect(outcome.data?.count == Self.size)
        }

        final class OperationBox: Sendable {
            let operation: Mutex<URLConnectionOperation?>
            init(_ operation: URLConnectionOperation) { self.operation = Mutex(operation) }
        }

        final class PausesWhilePreparingOnly: HTTPRequestOperation, @unchecked Sendable {
            override func prepareRequest() throws -> URLRequest? {
                pause()
                return nil
            }
        }

        /// A pause while the request is prepared, and a resume after the connection exists but
        /// before the start's job reached the network thread (found by review): the resume
        /// reached an idle machine and was ignored, then the start paused it for good. The
        /// operation said "executing" and never sent anything. Now the start reads the phase
        /// when it runs, and finishes.
        @Test func aResumeBetweenTheConnectionAndTheStartsJobIsNotLost() async throws {
            let op = PausesWhilePreparingOnly(request: URLRequest(url: testServer.url(.bytes(1_000))))
            let target = OperationBox(op)
            // Resumes the operation from inside the start's "request started" log line: after
            // the connection exists, before the start's job reaches the network thread.
            var logger = Logger(label: "resume-race") { _ in
                ClosureLogHandler { _, message, _ in
                    if message == "request started" { target.operation.withLock { $0 }?.resume() }
                }
            }
            logger.logLevel = .debug
            op.configuration.logger = logger
            let outcome = try await run(op, timeout: .seconds(10))
            target.operation.withLock { $0 = nil }
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(outcome.data?.count == 1_000)
        }

        /// A stream whose close takes a while: the window between the outcome and its report.
        final class SlowClosingStream: OutputStream {
            let received = Mutex(0)
            override func open() {}
            override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
                received.withLock { $0 += len }
                return len
            }
            override func close() { Thread.sleep(forTimeInterval: 0.6) }
            override var hasSpaceAvailable: Bool { true }
        }

        /// A pause (or cancel) that comes after the outcome, while the body's writes are
        /// closing, does not take effect: the operation is not paused when the pause's
        /// completion runs, and its success stands (before: it said paused, and shutdown
        /// cancelled a finished download).
        @Test(arguments: ["pause", "cancel"])
        func aPauseOrCancelAfterTheOutcomeDoesNotTakeEffect(_ action: String) async throws {
            let op = HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: Self.size, options: ResumableOptions()))))
            let stream = SlowClosingStream(toMemory: ())
            op.outputStream = stream
            let allReceived = TestSignal("every byte received")
            op.setDownloadProgressBlock { _, total, _ in
                if total == Int64(Self.size) { allReceived.fire() }
            }
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            OperationQueue().addOperation(op)
            try await allReceived.wait(timeout: .seconds(10))
            // The machine has its outcome; the writer is closing the stream for 0.6 s.
            try await Task.sleep(for: .milliseconds(150))
            let pausedThen = Mutex<Bool?>(nil)
            let answered = TestSignal("pause completion")
            if action == "pause" {
                op.pause {
                    pausedThen.withLock { $0 = op.isPaused }
                    answered.fire()
                }
                try await answered.wait(timeout: .seconds(5))
                #expect(pausedThen.withLock { $0 } == false)
            } else {
                op.cancel()
            }
            try await recorder.done.wait(timeout: .seconds(10))
            #expect(recorder.outcome(of: op)?.error == nil, "\(String(describing: recorder.outcome(of: op)?.error))")
            #expect(!op.isCancelled)
            #expect(stream.received.withLock { $0 } == Self.size)
        }
    }
}
