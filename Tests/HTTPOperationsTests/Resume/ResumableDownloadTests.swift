import Crypto
import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// Pause, resume, automatic resume and resume data against the test server's resumable
    /// endpoint with injected faults. Every test checks the final bytes by SHA-256.
    @Suite struct ResumableDownloads {
        static let size = 2_000_000

        private func url(_ options: ResumableOptions, size: Int = size) -> URL {
            testServer.url(.resumable(size: size, options: options))
        }

        private func expectedSHA256(version: Int = 0, size: Int = size) -> String {
            sha256(ResumableOptions.content(version: version, count: size))
        }

        /// An operation for the resumable resource, to `file` (memory when nil), retrying
        /// quickly after drops.
        private func download(_ options: ResumableOptions, to file: URL? = nil, retries: Int = 1) -> HTTPRequestOperation {
            let op = HTTPRequestOperation(request: URLRequest(url: url(options)))
            op.destinationURL = file
            op.retryPolicy = RetryPolicy(maximumRetries: retries, initialDelay: 0.01)
            return op
        }

        private func temporaryFile() -> URL {
            FileManager.default.temporaryDirectory.appendingPathComponent("httpop-resume-\(UUID()).bin")
        }

        private func remove(_ file: URL) {
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.removeItem(at: ResumeData.sidecarURL(for: file))
        }

        @Test(arguments: [false, true])
        func pauseAndResumeManyTimesKeepTheBytesExact(toFile: Bool) async throws {
            var options = ResumableOptions()
            options.chunkSize = 32 << 10
            options.chunkDelayMilliseconds = 2
            let file = temporaryFile()
            defer { remove(file) }
            let op = HTTPRequestOperation(request: URLRequest(url: url(options)))
            if toFile { op.destinationURL = file }
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            let crossed = TestSignal("progress thresholds")
            let pauses = 5
            let nextThreshold = Mutex<Int64>(200_000)
            op.setDownloadProgressBlock { _, total, expected in
                #expect(total <= expected)
                let due = nextThreshold.withLock { threshold -> Bool in
                    guard total >= threshold, threshold < 200_000 + Int64(pauses) * 300_000 else { return false }
                    threshold += 300_000
                    return true
                }
                if due {
                    op.pause()
                    crossed.fire()
                }
            }
            OperationQueue().addOperation(op)
            for round in 1...pauses {
                try await crossed.wait(times: round)
                #expect(op.isPaused)
                op.resume()
            }
            try await recorder.done.wait()
            #expect(recorder.outcome(of: op)?.error == nil)
            let body = toFile ? try Data(contentsOf: file) : try #require(op.responseData)
            #expect(sha256(body) == expectedSHA256())
            #expect(op.downloadMetrics.resumes >= 5)
            #expect(op.downloadMetrics.restartsFromZero == 0)
        }

        @Test func aNewOperationContinuesFromResumeData() async throws {
            var options = ResumableOptions()
            options.chunkSize = 64 << 10
            options.chunkDelayMilliseconds = 2
            let file = temporaryFile()
            defer { remove(file) }
            let first = HTTPRequestOperation(request: URLRequest(url: url(options)))
            first.destinationURL = file
            let paused = TestSignal("pause")
            let pausing = Mutex(false)
            first.setDownloadProgressBlock { _, total, _ in
                guard total > 500_000, !pausing.withLock({ let was = $0; $0 = true; return was }) else { return }
                // The completion runs once the pause took effect and the resume data is saved.
                first.pause { paused.fire() }
            }
            OperationQueue().addOperation(first)
            try await paused.wait()
            let saved = try #require(first.resumeData)
            first.cancel()
            #expect(saved.validator == .entityTag(#""v0-\#(Self.size)""#))
            #expect(saved.expectedLength == Int64(Self.size))

            // As another process would: through the encoded form.
            let second = HTTPRequestOperation(resumeData: try ResumeData(from: try saved.encoded()))
            #expect(try await run(second).error == nil)
            #expect(sha256(try Data(contentsOf: file)) == expectedSHA256())
            #expect(second.downloadMetrics.firstResumeOffset == saved.offset)
            #expect(second.downloadMetrics.restartsFromZero == 0)
            #expect(!FileManager.default.fileExists(atPath: ResumeData.sidecarURL(for: file).path))
        }

        @Test func aDownloadContinuesFromTheFileAndItsSidecarAfterACrash() async throws {
            var options = ResumableOptions()
            options.dropAfter = 800_000
            let file = temporaryFile()
            defer { remove(file) }
            let resource = url(options)
            let (first, resumingFrom) = HTTPRequestOperation.download(URLRequest(url: resource), to: file)
            #expect(resumingFrom == nil)
            first.retryPolicy = .none
            #expect(try await run(first).urlErrorCode == .networkConnectionLost)
            let sidecar = try ResumeData(from: try Data(contentsOf: ResumeData.sidecarURL(for: file)))
            #expect(sidecar.offset == 800_000)

            // A crash between a write and the next save: the file holds less than the sidecar says.
            let handle = try FileHandle(forWritingTo: file)
            try handle.truncate(atOffset: 777_777)
            try handle.close()

            let (second, resumed) = HTTPRequestOperation.download(URLRequest(url: resource), to: file)
            #expect(resumed?.offset == 800_000)
            #expect(try await run(second).error == nil)
            #expect(second.downloadMetrics.firstResumeOffset == 777_777, "the offset is what is on disk")
            #expect(sha256(try Data(contentsOf: file)) == expectedSHA256())
        }

        @Test(arguments: [false, true])
        func aDroppedConnectionResumesItself(reset: Bool) async throws {
            var options = ResumableOptions()
            options.dropAfter = 300_000
            options.drops = 2
            options.resetOnDrop = reset
            let op = download(options, retries: 3)
            #expect(try await run(op).error == nil)
            #expect(sha256(try #require(op.responseData)) == expectedSHA256())
            #expect(op.downloadMetrics.automaticResumes == 2)
            #expect(op.downloadMetrics.restartsFromZero == 0)
        }

        @Test func retriesStopAtThePolicyLimit() async throws {
            var options = ResumableOptions()
            options.dropAfter = 100_000
            options.drops = 10
            let op = download(options, retries: 2)
            #expect(try await run(op).urlErrorCode == .networkConnectionLost)
            #expect(op.downloadMetrics.automaticResumes == 2)
        }

        @Test func aChangedResourceRestartsFromZero() async throws {
            var options = ResumableOptions()
            options.changeEachRequest = true
            options.dropAfter = 400_000
            let op = download(options, retries: 1)
            let totals = Mutex<[Int64]>([])
            op.setDownloadProgressBlock { _, total, expected in
                totals.withLock { $0.append(total) }
                #expect(expected < 0 || total <= expected)
            }
            #expect(try await run(op).error == nil)
            // The second request named version 0 in If-Range; the server had version 1 and
            // sent it whole. Nothing of version 0 survives.
            #expect(sha256(try #require(op.responseData)) == expectedSHA256(version: 1))
            #expect(op.downloadMetrics.restartsFromZero == 1)
            #expect(op.downloadMetrics.bytesRefetched == 400_000)
            #expect(totals.withLock { $0.last } == Int64(Self.size))
        }

        @Test func aServerThatIgnoresRangeRestartsFromZero() async throws {
            var options = ResumableOptions()
            options.ignoreRange = true
            options.dropAfter = 500_000
            let file = temporaryFile()
            defer { remove(file) }
            let op = download(options, to: file, retries: 1)
            #expect(try await run(op).error == nil)
            #expect(sha256(try Data(contentsOf: file)) == expectedSHA256())
            #expect(op.downloadMetrics.restartsFromZero == 1)
        }

        @Test(arguments: [false, true])
        func aBadContentRangeFailsAndKeepsThePrefix(missing: Bool) async throws {
            var options = ResumableOptions()
            if missing { options.omitContentRange = true } else { options.wrongContentRangeStart = true }
            options.dropAfter = 600_000
            let file = temporaryFile()
            defer { remove(file) }
            let op = download(options, to: file, retries: 1)
            let error = try #require(try await run(op).error as? ResumeError)
            if missing {
                #expect(error.reason == .malformedContentRange(nil))
            } else {
                #expect(error.reason == .rangeStartMismatch(expected: 600_000, received: 600_100))
            }
            #expect(error.response?.statusCode == 206)
            let held = try Data(contentsOf: file)
            #expect(held == ResumableOptions.content(version: 0, count: 600_000), "the prefix is intact")
        }

        @Test func a416ForExactlyTheBytesHeldCompletes() async throws {
            let file = temporaryFile()
            defer { remove(file) }
            try ResumableOptions.content(version: 0, count: Self.size).write(to: file)
            let op = HTTPRequestOperation(request: URLRequest(url: url(ResumableOptions())))
            op.destinationURL = file
            op.resumesExistingFile = true
            #expect(try await run(op).error == nil)
            #expect(op.response?.statusCode == 200)
            #expect(sha256(try Data(contentsOf: file)) == expectedSHA256())
        }

        @Test func aLastModifiedDateServesAsTheValidator() async throws {
            var options = ResumableOptions()
            options.etag = .none
            options.lastModified = true
            options.dropAfter = 250_000
            let file = temporaryFile()
            defer { remove(file) }
            let op = download(options, to: file, retries: 1)
            let validator = Mutex<ResumeValidator?>(nil)
            op.setDownloadProgressBlock { _, _, _ in
                if let seen = op.resumeData?.validator { validator.withLock { $0 = seen } }
            }
            #expect(try await run(op).error == nil)
            #expect(validator.withLock { $0 } == .lastModified("Sat, 21 Nov 2026 10:00:00 GMT"))
            #expect(op.resumeData == nil, "complete: nothing left to resume")
            #expect(op.downloadMetrics.automaticResumes == 1)
            #expect(op.downloadMetrics.restartsFromZero == 0)
            #expect(sha256(try Data(contentsOf: file)) == expectedSHA256())
        }

        /// Without a strong validator nothing tells the bytes held from the next version's
        /// (RFC 9110 §13.1.5): after a drop the resource is asked for whole, never continued
        /// with a `Range` alone.
        @Test(arguments: [ResumableOptions.EntityTag.none, .weak])
        func withoutAStrongValidatorTheResourceIsAskedForWhole(etag: ResumableOptions.EntityTag) async throws {
            var options = ResumableOptions()
            options.etag = etag
            options.dropAfter = 250_000
            let op = download(options, retries: 1)
            #expect(try await run(op).error == nil)
            #expect(op.downloadMetrics.restartsFromZero == 1)
            #expect(op.downloadMetrics.bytesRefetched > 0)
            #expect(sha256(try #require(op.responseData)) == expectedSHA256())
        }

        @Test func aCallersStreamCannotRestartSoTheResumeFails() async throws {
            var options = ResumableOptions()
            options.ignoreRange = true
            options.dropAfter = 100_000
            let op = HTTPRequestOperation(request: URLRequest(url: url(options)))
            op.outputStream = OutputStream.toMemory()
            op.retryPolicy = RetryPolicy(maximumRetries: 1, initialDelay: 0.01)
            let error = try #require(try await run(op).error as? ResumeError)
            #expect(error.reason == .cannotRestartOutputStream)
        }

        @Test func theExpectedChecksumAndLengthAreVerified() async throws {
            let good = HTTPRequestOperation(request: URLRequest(url: url(ResumableOptions())))
            good.expectedSHA256 = expectedSHA256().uppercased()
            good.expectedContentLength = Int64(Self.size)
            #expect(try await run(good).error == nil)

            let file = temporaryFile()
            defer { remove(file) }
            let bad = HTTPRequestOperation(request: URLRequest(url: url(ResumableOptions())))
            bad.destinationURL = file
            bad.expectedSHA256 = String(repeating: "0", count: 64)
            let error = try #require(try await run(bad).error as? IntegrityError)
            #expect(error.reason == .checksumMismatch(expected: String(repeating: "0", count: 64), actual: expectedSHA256()))

            let short = HTTPRequestOperation(request: URLRequest(url: url(ResumableOptions())))
            short.expectedContentLength = Int64(Self.size + 1)
            #expect((try await run(short).error as? IntegrityError)?.reason
                == .lengthMismatch(expected: Int64(Self.size + 1), actual: Int64(Self.size)))
        }

        @Test func aDestinationHoldingOtherBytesIsReplacedNotAppendedTo() async throws {
            let file = temporaryFile()
            defer { remove(file) }
            try Data(repeating: 0xEE, count: 3 * Self.size).write(to: file)
            #expect(try await run(download(ResumableOptions(), to: file)).error == nil)
            let written = try Data(contentsOf: file)
            #expect(written.count == Self.size)
            #expect(sha256(written) == expectedSHA256())
        }

        @Test func aDestinationInAMissingFolderFailsWithCannotCreateFile() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-missing-\(UUID())")
            let op = download(ResumableOptions(), to: folder.appendingPathComponent("body.bin"))
            let error = try #require(try await run(op).error as? URLError)
            #expect(error.code == .cannotCreateFile)
            #expect(!FileManager.default.fileExists(atPath: folder.path))
        }
    }
}

/// The SHA-256 of `data`, as lowercase hex.
func sha256(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}
