import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension AllTests {
    /// Resumable uploads over real HTTP, against the test server's tus and IETF-draft routes:
    /// whole uploads, drops, lies, expiry, checksums, pause, cancel and restart. Each checks
    /// the server's bytes against the file's.
    @Suite struct ResumableUploads {
        private func finish(_ operation: ResumableUploadOperation) async throws {
            operation.start()
            try await waitUntilFinished(operation)
        }

        @Test(arguments: ResumableUploadProtocol.allCases)
        func aFileArrivesWholeInChunks(uploadProtocol: ResumableUploadProtocol) async throws {
            let run = try UploadRun(size: 200_000, protocol: uploadProtocol)
            let operation = run.operation()
            try await finish(operation)
            #expect(operation.error == nil)
            #expect(operation.isCompleted)
            let upload = try #require(run.uploads.first)
            #expect(run.uploads.count == 1)
            #expect(upload.bytes == run.content)
            #expect(operation.uploadURL?.lastPathComponent == upload.id)
            #expect(run.progress.withLock { $0.last } == 200_000)
            // tus discovers first and sends the first chunk with the creation (creation-with-upload).
            let chunks = (200_000 + (16 << 10) - 1) / (16 << 10)
            let expected = ["OPTIONS 204", "POST 201"] + Array(repeating: "PATCH 204", count: chunks - 1)
            #expect(run.log == expected)
            if uploadProtocol == .ietfDraft { #expect(upload.completeSaid) }
        }

        @Test func tusNamesTheStrongestChecksumTheServerKnowsAndA460SendsTheBytesAgain() async throws {
            var options = UploadStore.Options()
            options.checksumAlgorithms = ["md5", "sha1"]
            let run = try UploadRun(size: 50_000, options: options, faults: [2: .corrupt])
            let operation = run.operation()
            try await finish(operation)
            #expect(operation.error == nil)
            #expect(run.uploads.first?.bytes == run.content)
            // Damaged bytes are not kept: the offset is asked again, and the same bytes go again.
            #expect(run.log == ["OPTIONS 204", "POST 201", "PATCH 460", "HEAD 200", "PATCH 204", "PATCH 204", "PATCH 204"])
            #expect(operation.resumeData?.checksumAlgorithm == "sha1")
        }

        @Test(arguments: ResumableUploadProtocol.allCases)
        func aDropMidAppendResumesFromTheOffsetTheServerReports(uploadProtocol: ResumableUploadProtocol) async throws {
            let first = 1
            let run = try UploadRun(size: 100_000, protocol: uploadProtocol, options: {
                var options = UploadStore.Options()
                options.checksumAlgorithms = []
                return options
            }(), faults: [first + 2: .dropAfter(bytes: 5_000), first + 4: .dropBeforeAnswer])
            let operation = run.operation()
            try await finish(operation)
            #expect(operation.error == nil)
            #expect(run.uploads.count == 1)
            #expect(run.uploads.first?.bytes == run.content)
            // After each drop, the offset is asked before another byte goes.
            let log = run.log
            for (index, entry) in log.enumerated() where entry.hasSuffix("drop") {
                #expect(index + 1 < log.count && log[index + 1].hasPrefix("HEAD"), "\(log)")
            }
            #expect(log.filter { $0.hasSuffix("drop") }.count == 2)
        }

        @Test func theDraftsCreationDroppedAfterIts104ResumesTheSameUpload() async throws {
            // The server reads the creation whole, then closes without its final answer: the 104
            // is in the client's hands before the end. (A close with request bytes still unread
            // resets the connection, and a reset can discard a 104 not yet read: then the client,
            // knowing no upload, creates one again — safe, and the case below allows it.)
            let run = try UploadRun(size: 40_000, protocol: .ietfDraft, faults: [1: .dropBeforeAnswer])
            let operation = run.operation()
            try await finish(operation)
            #expect(operation.error == nil)
            #expect(run.uploads.count == 1, "a second upload was created: \(run.log)")
            #expect(run.uploads.first?.bytes == run.content)
            #expect(run.log.prefix(3) == ["OPTIONS 204", "POST drop", "HEAD 204"])
        }

        /// A server not known to resume (no `Upload-Limit`) gets the whole
        /// upload with its creation, `Upload-Complete: ?1`, never a part taken for the whole;
        /// dropped after its 104, it goes on with appends. One that limits appends gets no more.
        @Test func theDraftSendsTheWholeUploadToAServerNotKnownToResumeAndHonoursUploadLimit() async throws {
            var unknown = UploadStore.Options()
            unknown.advertisesUploadLimit = false
            let whole = try UploadRun(size: 100_000, protocol: .ietfDraft, options: unknown)
            let wholeOperation = whole.operation()
            try await finish(wholeOperation)
            #expect(wholeOperation.error == nil)
            #expect(whole.log == ["OPTIONS 405", "POST 201"])
            #expect(whole.uploads.first?.bytes == whole.content)
            #expect(whole.uploads.first?.completeSaid == true)

            // Cut after 30,000 bytes: the server closes with request bytes unread, which resets
            // the connection; the 104 reaches the client first or is discarded with the reset.
            let dropped = try UploadRun(size: 100_000, protocol: .ietfDraft, options: unknown, faults: [1: .dropAfter(bytes: 30_000)])
            let droppedOperation = dropped.operation()
            try await finish(droppedOperation)
            #expect(droppedOperation.error == nil)
            let finalUpload = try #require(droppedOperation.uploadURL.flatMap { testServer.uploads.upload(at: $0) })
            #expect(finalUpload.bytes == dropped.content)
            if dropped.log.prefix(3) == ["OPTIONS 405", "POST drop", "HEAD 204"] {
                // The 104 was read: the same upload went on with appends.
                #expect(dropped.uploads.count == 1)
            } else {
                // It was not: a second creation, and the first upload holds a prefix of the file.
                #expect(dropped.log.prefix(3) == ["OPTIONS 405", "POST drop", "POST 201"], "\(dropped.log)")
                #expect(dropped.uploads.count == 2)
                #expect(dropped.content.starts(with: dropped.uploads.first?.bytes ?? Data([0xFF])))
            }

            var limited = UploadStore.Options()
            limited.maximumAppendSize = 5_000
            let small = try UploadRun(size: 20_000, protocol: .ietfDraft, options: limited)
            let smallOperation = small.operation()
            try await finish(smallOperation)
            #expect(smallOperation.error == nil)
            #expect(small.log == ["OPTIONS 204", "POST 201", "PATCH 204", "PATCH 204", "PATCH 204"])
            #expect(small.uploads.first?.bytes == small.content)
        }

        @Test func offsetsThatCannotBeTrueEndTheUploadTyped() async throws {
            // Ahead of every byte sent (the HEAD after a drop claims more than was ever sent).
            let ahead = try UploadRun(size: 60_000, faults: [2: .dropAfter(bytes: 100), 3: .reportOffset(delta: 40_000)])
            let aheadOperation = ahead.operation()
            try await finish(aheadOperation)
            #expect((aheadOperation.error as? UploadError)?.code == .offsetAhead)
            // Behind what it acknowledged (it lost bytes).
            // (A loss within the append's own answer is believed: a server may keep fewer bytes
            // than sent. Here the append after an acknowledged one loses more than it added.)
            let behind = try UploadRun(size: 80_000, faults: [4: .loseBytes(20_000)])
            let behindOperation = behind.operation()
            try await finish(behindOperation)
            #expect((behindOperation.error as? UploadError)?.code == .offsetBehind)
            // Beyond the length.
            let beyond = try UploadRun(size: 20_000, faults: [2: .dropBeforeAnswer, 3: .reportOffset(delta: 50_000)])
            let beyondOperation = beyond.operation()
            try await finish(beyondOperation)
            #expect((beyondOperation.error as? UploadError)?.code == .offsetBeyondLength)
            for operation in [aheadOperation, behindOperation, beyondOperation] { #expect(!operation.isCompleted) }
        }

        @Test func anExpiredUploadIsGoneAndServerErrorsAreRetriedThenExhausted() async throws {
            let expired = try UploadRun(size: 60_000, faults: [3: .expire])
            let expiredOperation = expired.operation()
            try await finish(expiredOperation)
            #expect((expiredOperation.error as? UploadError)?.reason == .uploadGone(status: 410), "\(expired.log)")
            #expect(expiredOperation.expires != nil)

            let flaky = try UploadRun(size: 30_000, faults: [2: .status(503), 3: .status(502), 4: .stall(milliseconds: 50)])
            let flakyOperation = flaky.operation()
            try await finish(flakyOperation)
            #expect(flakyOperation.error == nil)
            #expect(flaky.uploads.first?.bytes == flaky.content)

            let down = try UploadRun(size: 30_000, faults: Dictionary(uniqueKeysWithValues: (2..<40).map { ($0, UploadStore.Fault.status(503)) }))
            let downOperation = down.operation(down.configuration { $0.maximumConsecutiveFailures = 3 })
            try await finish(downOperation)
            let error = try #require(downOperation.error as? UploadError)
            #expect(error.reason == .retriesExhausted(attempts: 4))
            #expect((error.underlyingError as? ResponseValidationError)?.response.statusCode == 503)
        }

        @Test func pauseHoldsTheUploadAndResumeAsksTheOffsetFirst() async throws {
            let run = try UploadRun(size: 80_000, faults: [3: .stall(milliseconds: 300)], signalAt: 32 << 10)
            let operation = run.operation()
            operation.start()
            try await run.reached.wait()
            operation.pause()
            #expect(operation.isPaused)
            let pausedAt = run.log.count
            try await Task.sleep(for: .milliseconds(400))
            operation.resume()
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(run.uploads.first?.bytes == run.content)
            #expect(run.log.dropFirst(pausedAt).first { !$0.hasPrefix("PATCH 204") } == "HEAD 200", "\(run.log)")
        }

        @Test func cancelStopsAndTerminatesWhenAsked() async throws {
            let run = try UploadRun(size: 80_000, faults: [3: .stall(milliseconds: 300)], signalAt: 32 << 10)
            let operation = run.operation(run.configuration { $0.terminatesOnCancel = true })
            operation.start()
            try await run.reached.wait()
            operation.cancel()
            try await waitUntilFinished(operation)
            #expect((operation.error as? URLError)?.code == .cancelled)
            #expect(!operation.isCompleted)
            #expect(run.uploads.first?.deleted == true)
            #expect(run.log.last == "DELETE 204")
        }

        @Test func aRestartGoesOnFromResumeDataAndAChangedFileIsRefused() async throws {
            let run = try UploadRun(size: 120_000, faults: [4: .stall(milliseconds: 300)], signalAt: 48 << 10)
            let first = run.operation()
            first.start()
            try await run.reached.wait()
            first.cancel()
            try await waitUntilFinished(first)
            let saved = try #require(run.savedResumeData.withLock { $0.last })
            // Through its saved form, as a restarted process reads it.
            let resumeData = try UploadResumeData(encoded: saved.encoded())
            var marked = URLRequest(url: run.creationURL)
            marked.setValue("2", forHTTPHeaderField: "X-Process")
            let second = run.watch(ResumableUploadOperation(request: marked, resumeData: resumeData, configuration: run.configuration()))
            try await finish(second)
            #expect(second.error == nil)
            #expect(run.uploads.count == 1)
            #expect(run.uploads.first?.bytes == run.content)
            // The restarted upload asked the offset before sending a byte.
            let restarted = testServer.receivedRequests.filter { $0.header("X-Process") == "2" }
            #expect(restarted.first?.method == "HEAD")

            // The same file, one byte changed (same size): refused before any request.
            let changed = try UploadRun(size: 60_000, faults: [3: .stall(milliseconds: 300)], signalAt: 32 << 10)
            let interrupted = changed.operation()
            interrupted.start()
            try await changed.reached.wait()
            interrupted.cancel()
            try await waitUntilFinished(interrupted)
            var altered = changed.content
            altered[30_000] ^= 0xFF
            try altered.write(to: changed.file)
            let refusedData = try #require(changed.savedResumeData.withLock { $0.last })
            let refused = ResumableUploadOperation(request: URLRequest(url: changed.creationURL), resumeData: refusedData,
                                                   configuration: changed.configuration())
            try await finish(refused)
            #expect((refused.error as? UploadError)?.code == .fileChanged)
            // Refused before any request. (The server's log cannot tell: the interrupted
            // operation's last append may still be arriving there.)
            #expect(refused.requestCount == 0)
        }

        @Test func aStreamSourceResumesFromTheBytesItStillHolds() async throws {
            // No checksum: the dropped append keeps 2,000 of its bytes, so the upload goes on from
            // the middle of the bytes the stream still holds.
            var options = UploadStore.Options()
            options.checksumAlgorithms = []
            let run = try UploadRun(size: 70_000, options: options, faults: [3: .dropAfter(bytes: 2_000)])
            let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            for start in stride(from: 0, to: run.content.count, by: 7_000) {
                continuation.yield(run.content.subdata(in: start..<min(start + 7_000, run.content.count)))
            }
            continuation.finish()
            let operation = run.operation(source: .stream(length: Int64(run.content.count), stream))
            try await finish(operation)
            #expect(operation.error == nil)
            #expect(run.uploads.first?.bytes == run.content)
            #expect(run.log.prefix(5) == ["OPTIONS 204", "POST 201", "PATCH 204", "PATCH drop", "HEAD 200"])
            #expect(operation.resumeData == nil)
        }

        /// A cancel while the upload waits for a stream's next bytes ends it.
        @Test func aCancelEndsAWaitForAStreamsBytes() async throws {
            let run = try UploadRun(size: 50_000)
            let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            continuation.yield(run.content.prefix(10_000))
            let operation = run.operation(source: .stream(length: 50_000, stream))
            operation.start()
            // The creation's first chunk needs 16 KiB; the stream gave 10,000 bytes and waits.
            try await Task.sleep(for: .milliseconds(200))
            operation.cancel()
            try await waitUntilFinished(operation, timeout: .seconds(5))
            #expect((operation.error as? URLError)?.code == .cancelled)
            // The creation never went: its bytes never came.
            #expect(!run.log.contains { $0.hasPrefix("POST") }, "\(run.log)")
            continuation.finish()
        }

        /// A file rewritten during the upload with its size and modification
        /// time put back (as `touch -r` or `rsync -t` do) is refused at the next chunk.
        @Test func aFileChangedWithItsModificationTimeRestoredIsRefused() async throws {
            let (run, operation) = try await UploadRun.startedAndHeldMidway()
            var before = stat()
            #expect(stat(run.file.path, &before) == 0)
            var altered = run.content
            altered[90_000] ^= 0xFF
            try altered.write(to: run.file)
            var times = [before.st_atim, before.st_mtim]
            #expect(utimensat(AT_FDCWD, run.file.path, &times, 0) == 0)
            try await waitUntilFinished(operation)
            #expect((operation.error as? UploadError)?.code == .fileChanged)
            #expect(!operation.isCompleted)
            #expect(run.content.starts(with: run.uploads.first?.bytes ?? Data()))
        }

        /// A 200 MiB file goes up in flat memory (read a chunk at a time), hashed once, and
        /// arrives whole (the server here counts and hashes instead of keeping the bytes).
        @Test(.enabled(if: residentMemoryIsMeaningful, "RSS under AddressSanitizer measures the sanitizer"))
        func aLargeFileGoesUpInFlatMemory() async throws {
            let size: Int64 = 200 << 20
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-tus-\(UUID()).bin")
            defer { try? FileManager.default.removeItem(at: file) }
            // Each mebibyte different (its number in every byte), so that a chunk sent twice, out
            // of order or from the wrong offset changes the server's SHA-256.
            #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
            let handle = try FileHandle(forWritingTo: file)
            var expected = SHA256()
            for block in 0..<Int(size >> 20) {
                let bytes = Data(repeating: UInt8(truncatingIfNeeded: block &* 7 &+ 1), count: 1 << 20)
                try handle.write(contentsOf: bytes)
                expected.update(data: bytes)
            }
            try handle.close()
            let collection = "big\(UUID().uuidString.prefix(8).lowercased())"
            var options = UploadStore.Options()
            options.keepsBytes = false
            options.checksumAlgorithms = []
            testServer.uploads.configure(collection, options: options)
            let configuration = UploadConfiguration()            // 4 MiB chunks
            let creation = testServer.baseURL.appendingPathComponent("tus").appendingPathComponent(collection)
            let operation = ResumableUploadOperation(request: URLRequest(url: creation, timeoutInterval: 30), source: .file(file),
                                                     configuration: configuration)
            let peakGrowth = Mutex(0)
            try MemoryProbe.resetPeak()
            let baseline = try MemoryProbe.residentBytes()
            operation.setProgressHandler { _, _, _ in
                peakGrowth.withLock { $0 = max($0, ((try? MemoryProbe.residentBytes()) ?? Int.max) - baseline) }
            }
            operation.start()
            try await waitUntilFinished(operation, timeout: .seconds(120))
            let growth = max(try MemoryProbe.peakBytes() - baseline, peakGrowth.withLock { $0 })
            print("a 200 MiB tus upload in 4 MiB chunks: peak memory grew by \(growth >> 20) MiB")
            #expect(operation.error == nil)
            let upload = try #require(operation.uploadURL.flatMap { testServer.uploads.upload(at: $0) })
            #expect(upload.count == size)
            #expect(upload.sha256 == expected.finalize().map { String(format: "%02x", $0) }.joined())
            // A 4 MiB chunk is read, sent and let go, one at a time (client and in-process server
            // together hold a few copies of it).
            #expect(growth < 48 << 20, "peak memory grew by \(growth >> 20) MiB for a 200 MiB upload")
        }

        /// An operation made from resume data has that resume data
        /// before it starts (a Ctrl-C while a large file is hashed again must not lose it).
        @Test func resumeDataIsThereBeforeTheFileIsMeasuredAgain() throws {
            let run = try UploadRun(size: 1_000)
            let data = UploadResumeData(uploadProtocol: .tus, uploadURL: run.creationURL.appendingPathComponent("u1"), fileURL: run.file,
                                        file: UploadFileIdentity(size: 1_000, modificationNanoseconds: 1, sha256: "00"),
                                        acknowledgedOffset: 500, sentOffset: 600, checksumAlgorithm: nil, expires: nil)
            let operation = ResumableUploadOperation(request: URLRequest(url: run.creationURL), resumeData: data)
            #expect(operation.resumeData == data)
        }

        /// A cancel that ends a wait for a stream's bytes still deletes
        /// the upload when asked to.
        @Test func aCancelDuringAStreamsWaitStillTerminates() async throws {
            var options = UploadStore.Options()
            options.checksumAlgorithms = []
            // Progress past 16 KiB comes from the second append, so the upload exists by then.
            let run = try UploadRun(size: 50_000, options: options, signalAt: (16 << 10) + 1)
            let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            continuation.yield(run.content.prefix(30_000))
            let operation = run.operation(run.configuration(chunkSize: 8 << 10) { $0.terminatesOnCancel = true },
                                          source: .stream(length: 50_000, stream))
            operation.start()
            try await run.reached.wait()
            // 8 KiB with the creation, two appends of 8 KiB; the third waits for bytes the stream
            // does not have (it gave 30,000).
            try await Task.sleep(for: .milliseconds(100))
            operation.cancel()
            try await waitUntilFinished(operation, timeout: .seconds(5))
            #expect((operation.error as? URLError)?.code == .cancelled)
            #expect(operation.isTerminated)
            #expect(run.log.last == "DELETE 204", "\(run.log)")
            continuation.finish()
        }

        /// The draft's 104 names the upload, and the resume data says
        /// so at once (a crash during a whole-upload creation can go on from it).
        @Test func theDraftsInterimAnswerIsSavedInTheResumeData() async throws {
            var options = UploadStore.Options()
            options.advertisesUploadLimit = false
            let run = try UploadRun(size: 100_000, protocol: .ietfDraft, options: options, faults: [1: .stall(milliseconds: 300)])
            let operation = run.operation()
            try await finish(operation)
            #expect(operation.error == nil)
            let saved = run.savedResumeData.withLock { $0 }
            #expect(saved.first?.uploadURL == operation.uploadURL)
            #expect(saved.first?.acknowledgedOffset == 0)
        }

        /// A plain endpoint (no 104, no Location) that takes the
        /// draft's whole-upload creation completes it; and a file whose metadata changed (chmod)
        /// but whose content did not goes on (the content is hashed again to tell).
        @Test func aPlainEndpointCompletesAndAChmodIsNotAChange() async throws {
            var plain = UploadStore.Options()
            plain.advertisesUploadLimit = false
            plain.plainEndpoint = true
            let whole = try UploadRun(size: 30_000, protocol: .ietfDraft, options: plain)
            let manager = HTTPRequestOperationManager()
            let url = try await manager.upload(URLRequest(url: whole.creationURL), source: .file(whole.file),
                                               configuration: whole.configuration())
            #expect(url == whole.creationURL)
            #expect(whole.log == ["OPTIONS 405", "POST 200"])
            #expect(whole.uploads.first?.bytes == whole.content)

            let (run, operation) = try await UploadRun.startedAndHeldMidway()
            #expect(chmod(run.file.path, 0o600) == 0)
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(run.uploads.first?.bytes == run.content)
        }

        @Test func theManagersAsyncDoorReturnsTheUploadsURL() async throws {
            let run = try UploadRun(size: 10_000, protocol: .ietfDraft)
            let manager = HTTPRequestOperationManager(baseURL: testServer.baseURL)
            let url = try await manager.upload(URLRequest(url: run.creationURL), source: .data(run.content), configuration: run.configuration())
            #expect(testServer.uploads.upload(at: url)?.bytes == run.content)
        }
    }
}
