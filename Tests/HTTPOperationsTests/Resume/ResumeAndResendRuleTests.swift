import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// What is sent again and what is not: a credential through a pause, a drop and a
    /// redirect; never a POST; pause, resume and start in every state; and the memory limit,
    /// which is not a file's. Every download is checked by SHA-256 and by how many requests
    /// the server saw.
    @Suite struct ResumeAndResendRules {
        static let credential = URLCredential(user: "ada", password: "s3cret", persistence: .none)

        private func protectedResource(size: Int, _ configure: (inout ResumableOptions) -> Void = { _ in }) -> (URL, ResumableOptions) {
            var options = ResumableOptions()
            options.basicAuth = "ada:s3cret"
            configure(&options)
            return (testServer.url(.resumable(size: size, options: options)), options)
        }

        private func expectedSHA256(size: Int) -> String {
            sha256(ResumableOptions.content(version: 0, count: size))
        }

        /// Pauses `operation` once, when its progress passes `threshold`; `paused` fires once
        /// the pause took effect.
        private func pauseOnce(_ operation: HTTPRequestOperation, after threshold: Int64, paused: TestSignal) {
            let pausing = Mutex(false)
            operation.setDownloadProgressBlock { [weak operation] _, total, _ in
                guard total > threshold, !pausing.withLock({ let was = $0; $0 = true; return was }) else { return }
                operation?.pause { paused.fire() }
            }
        }

        /// Runs `operation`, pauses it once its progress passes `threshold`, and once the pause
        /// took effect lets it go on with `goOn` (`resume()` unless told otherwise).
        private func runPausedOnce(_ operation: HTTPRequestOperation, after threshold: Int64,
                                   goOn: (HTTPRequestOperation) -> Void = { $0.resume() }) async throws -> Outcome {
            let paused = TestSignal("pause")
            pauseOnce(operation, after: threshold, paused: paused)
            let recorder = OutcomeRecorder()
            recorder.watch(operation)
            OperationQueue().addOperation(operation)
            try await paused.wait()
            goOn(operation)
            try await recorder.done.wait()
            return try #require(recorder.outcome(of: operation))
        }

        // MARK: - A credential and a resumed download

        /// curl sends a credential after the server's 401 (it probes which scheme to use), so
        /// a resumed transfer sees two heads: the 401, then the 206. The 401 used to be taken
        /// as "not a range answer" and the real 206 body was held aside and reported as the
        /// result: a success with nothing appended (under 4 MiB) or a failure (over).
        @Test(arguments: [false, true])
        func aDownloadWithACredentialResumesAfterAPause(toFile: Bool) async throws {
            let size = 2_000_000
            let (url, options) = protectedResource(size: size) {
                $0.chunkSize = 32 << 10
                $0.chunkDelayMilliseconds = 2
            }
            let file = temporaryFile()
            defer { removeDownload(file) }
            let op = HTTPRequestOperation(request: URLRequest(url: url))
            op.credential = Self.credential
            if toFile { op.destinationURL = file }

            #expect(try await runPausedOnce(op, after: 500_000).error == nil)
            let body = toFile ? try Data(contentsOf: file) : try #require(op.responseData)
            #expect(body.count == size)
            #expect(sha256(body) == expectedSHA256(size: size))
            #expect(op.downloadMetrics.resumes == 1)
            #expect(op.downloadMetrics.restartsFromZero == 0)
            #expect(testServer.requestCount(forResumableKey: options.key) == 2)
        }

        /// The same after a dropped connection, with a tail under and over the 4 MiB that a
        /// body held aside may grow to.
        @Test(arguments: [(false, 2_000_000), (true, 2_000_000), (false, 6_000_000), (true, 6_000_000)])
        func aDownloadWithACredentialResumesAfterADrop(toFile: Bool, size: Int) async throws {
            let (url, options) = protectedResource(size: size) { $0.dropAfter = 800_000 }
            let file = temporaryFile()
            defer { removeDownload(file) }
            let op = HTTPRequestOperation(request: URLRequest(url: url))
            op.credential = Self.credential
            op.retryPolicy = RetryPolicy(maximumRetries: 1, initialDelay: 0.01)
            if toFile { op.destinationURL = file }

            let outcome = try await run(op)

            #expect(outcome.error == nil, "\(outcome.error.map { "\($0)" } ?? "")")
            let body = toFile ? try Data(contentsOf: file) : try #require(op.responseData)
            #expect(body.count == size)
            #expect(sha256(body) == expectedSHA256(size: size))
            #expect(op.downloadMetrics.automaticResumes == 1)
            #expect(op.downloadMetrics.restartsFromZero == 0)
            #expect(testServer.requestCount(forResumableKey: options.key) == 2)
            #expect(!FileManager.default.fileExists(atPath: ResumeData.sidecarURL(for: file).path))
        }

        /// With both a credential and a challenge block, the final 200 used to be held aside
        /// in memory behind curl's 401: no progress, and a failure over 4 MiB.
        @Test func aCredentialAndAChallengeBlockStreamTheBodyWithProgress() async throws {
            let size = 6_000_000
            let (url, _) = protectedResource(size: size)
            let file = temporaryFile()
            defer { removeDownload(file) }
            let op = HTTPRequestOperation(request: URLRequest(url: url))
            op.credential = Self.credential
            op.setAuthenticationChallengeBlock { _, _ in Self.credential }
            op.destinationURL = file
            let partialTotals = Mutex(0)
            op.setDownloadProgressBlock { _, total, _ in
                if total < Int64(size) { partialTotals.withLock { $0 += 1 } }
            }

            let outcome = try await run(op)

            #expect(outcome.error == nil, "\(outcome.error.map { "\($0)" } ?? "")")
            #expect(sha256(try Data(contentsOf: file)) == expectedSHA256(size: size))
            #expect(partialTotals.withLock { $0 } > 0, "progress reported while the body arrived")
        }

        // MARK: - Requests that must not be sent twice

        /// A POST whose connection drops is not re-sent, even though its answer carried a
        /// validator (which used to enable the retry).
        @Test func aDroppedPostIsNotSentAgain() async throws {
            var options = ResumableOptions()
            options.dropAfter = 100_000
            var request = URLRequest(url: testServer.url(.resumable(size: 1_000_000, options: options)))
            request.httpMethod = "POST"
            request.httpBody = Data("order=1".utf8)
            let op = HTTPRequestOperation(request: request)
            op.retryPolicy = RetryPolicy(maximumRetries: 3, initialDelay: 0.01)

            let outcome = try await run(op)

            #expect(outcome.urlErrorCode == .networkConnectionLost)
            #expect(testServer.requestCount(forResumableKey: options.key) == 1)
        }

        /// `resume()` of a POST that was sent fails the operation and sends nothing again.
        @Test func resumingAPausedPostFailsWithoutSendingItAgain() async throws {
            var options = ResumableOptions()
            options.chunkSize = 16 << 10
            options.chunkDelayMilliseconds = 5
            var request = URLRequest(url: testServer.url(.resumable(size: 1_000_000, options: options)))
            request.httpMethod = "POST"
            request.httpBody = Data("order=1".utf8)
            let op = HTTPRequestOperation(request: request)

            let error = try #require(try await runPausedOnce(op, after: 100_000).error)
            #expect((error as? TransferError)?.code == .requestNotResendable, "\(error)")
            #expect(testServer.requestCount(forResumableKey: options.key) == 1)
        }

        /// AFNetworking 2 users call `start()` to go on after a pause. It resumes: no second
        /// connection, no emptied file, nothing fetched twice.
        @Test func startOnAPausedOperationResumesIt() async throws {
            let size = 2_000_000
            var options = ResumableOptions()
            options.chunkSize = 32 << 10
            options.chunkDelayMilliseconds = 2
            let file = temporaryFile()
            defer { removeDownload(file) }
            let op = HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: size, options: options))))
            op.destinationURL = file

            let outcome = try await runPausedOnce(op, after: 500_000) { op in
                op.start()
                #expect(!op.isPaused)
            }
            #expect(outcome.error == nil)
            #expect(sha256(try Data(contentsOf: file)) == expectedSHA256(size: size))
            #expect(op.downloadMetrics.resumes == 1)
            #expect((op.downloadMetrics.firstResumeOffset ?? 0) > 500_000)
            #expect(op.downloadMetrics.bytesRefetched == 0)
            #expect(testServer.requestCount(forResumableKey: options.key) == 2)
        }

        // MARK: - pause(completion:) always answers

        /// Pauses itself before its transfer exists.
        final class PausesWhilePreparing: HTTPRequestOperation, @unchecked Sendable {
            let paused = TestSignal("pause while preparing")
            override func prepareRequest() throws -> URLRequest? {
                pause { self.paused.fire() }
                return nil
            }
        }

        @Test func aPauseBeforeTheTransferExistsCallsBack() async throws {
            let op = PausesWhilePreparing(request: URLRequest(url: testServer.url(.bytes(1000))))
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            OperationQueue().addOperation(op)
            try await op.paused.wait(timeout: .seconds(5))
            #expect(op.isPaused)
            op.resume()
            try await recorder.done.wait()
            #expect(recorder.outcome(of: op)?.error == nil)
            #expect(op.responseData == TestServer.pattern(count: 1000))
        }

        @Test func aPauseAfterTheOutcomeOrAfterFinishCallsBackAndPausesNothing() async throws {
            let op = operation(.bytes(10))
            let inBlock = TestSignal("pause from the success block")
            op.setCompletionBlockWithSuccess({ op, _ in op.pause { inBlock.fire() } }, failure: { _, _ in })
            OperationQueue().addOperation(op)
            try await inBlock.wait(timeout: .seconds(5))
            try await waitUntilFinished(op)
            #expect(op.isFinished)
            #expect(!op.isPaused)
            #expect(op.error == nil)

            let afterFinish = TestSignal("pause after finish")
            op.pause { afterFinish.fire() }
            try await afterFinish.wait(timeout: .seconds(5))
            #expect(!op.isPaused)
        }

        @Test func aCancelledOperationCannotBePausedOrResumed() async throws {
            var options = ResumableOptions()
            options.chunkSize = 16 << 10
            options.chunkDelayMilliseconds = 5
            let op = HTTPRequestOperation(request: URLRequest(url: testServer.url(.resumable(size: 1_000_000, options: options))))
            let receiving = TestSignal("first bytes")
            op.setDownloadProgressBlock { _, _, _ in receiving.fire() }
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            OperationQueue().addOperation(op)
            try await receiving.wait()
            op.cancel()
            op.pause()
            #expect(!op.isPaused, "pause() of a cancelled operation does nothing")
            try await recorder.done.wait()
            #expect(recorder.outcome(of: op)?.urlErrorCode == .cancelled)
            try await waitUntilFinished(op)
            op.resume()
            #expect(op.isFinished)
            #expect(!op.isExecuting)
        }

        // MARK: - Credentials reach the origin they belong to

        @Test func aChainedRequestSendsTheManagersCredential() async throws {
            let manager = HTTPRequestOperationManager(baseURL: testServer.baseURL)
            manager.responseSerializer = HTTPResponseSerializer()
            manager.credential = Self.credential
            let first = try #require(manager.get("bytes/10", success: nil, failure: nil))
            let chained = manager.chain(after: [first]) { _ in
                URLRequest(url: testServer.url(.basicAuth(user: "ada", password: "s3cret")))
            }
            try await waitUntilFinished(chained)
            #expect(chained.error == nil, "\(chained.error.map { "\($0)" } ?? "")")
            #expect(chained.response?.statusCode == 200)
        }

        /// A credential the challenge block gives for the origin a redirect led to is sent
        /// there: it answers that origin's challenge.
        @Test func aChallengeAnsweredAfterARedirectToAnotherOriginIsSent() async throws {
            let target = "http://localhost:\(testServer.port)/basic-auth/ada/s3cret"
            let op = operation(.redirectTo(target, status: 302))
            let challenges = Mutex(0)
            op.setAuthenticationChallengeBlock { _, challenge in
                challenges.withLock { $0 += 1 }
                return Self.credential
            }
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(outcome.error.map { "\($0)" } ?? "")")
            #expect(op.response?.url?.host == "localhost")
            #expect(challenges.withLock { $0 } == 1)
        }

        // MARK: - Operations waiting on dependencies stay the queue's

        @Test func operationsWaitingForDependenciesAreCountedAndCancelledWithTheQueue() async throws {
            let manager = HTTPRequestOperationManager(baseURL: testServer.baseURL)
            manager.responseSerializer = HTTPResponseSerializer()
            let slow = try #require(manager.get("delay/500", success: nil, failure: nil))
            let dependent = manager.chain(after: [slow]) { _ in URLRequest(url: testServer.url(.bytes(10))) }
            #expect(manager.operationCount == 2)
            #expect(manager.operations.contains { $0 === dependent })

            manager.operationQueue.cancelAllOperations()

            #expect(dependent.isCancelled)
            try await waitUntilFinished(dependent)
            #expect(dependent.responseData == nil, "nothing was sent")
            #expect((dependent.error as? DependencyError) != nil || (dependent.error as? URLError)?.code == .cancelled)
        }
    }
}

extension AllTests.ResumeAndResendRules {
    // MARK: - Bodies in memory have a limit

    @Test(arguments: [Endpoint.bytes(300_000), .chunked(300_000)])
    func aBodyInMemoryOverTheLimitFailsWithATypedError(endpoint: Endpoint) async throws {
        let op = operation(endpoint)
        op.maximumBodySize = 100_000
        let error = try #require(try await run(op).error)
        #expect((error as? TransferError)?.code == .bodyTooLarge, "\(error)")
        #expect((op.responseData?.count ?? 0) <= 100_000)
    }

    @Test func theLimitIsForMemoryNotForFiles() async throws {
        let file = temporaryFile()
        defer { removeDownload(file) }
        let op = operation(.bytes(300_000))
        op.maximumBodySize = 100_000
        op.destinationURL = file
        #expect(try await run(op).error == nil)
        #expect(try Data(contentsOf: file) == TestServer.pattern(count: 300_000))
    }
}
