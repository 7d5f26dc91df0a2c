import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    @Suite struct Downloads {
        @Test(.enabled(if: residentMemoryIsMeaningful, "RSS under AddressSanitizer measures the sanitizer"))
        func aLargeBodyStreamsToAFileInFlatMemory() async throws {
            // Eight times the growth allowed below; twice under ThreadSanitizer, which writes
            // the body several times slower and is there for races, not for growth.
            #if HTTPOPERATIONS_TSAN
            let size = 64 << 20
            #else
            let size = 256 << 20
            #endif
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-\(UUID()).bin").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let op = operation(.bytes(size))
            op.outputStream = OutputStream(toFileAtPath: path, append: false)
            let peakGrowth = Mutex(0)
            try MemoryProbe.resetPeak()
            let baseline = try MemoryProbe.residentBytes()
            op.setDownloadProgressBlock { _, _, _ in
                let growth = ((try? MemoryProbe.residentBytes()) ?? Int.max) - baseline
                peakGrowth.withLock { $0 = max($0, growth) }
            }
            let outcome = try await run(op, timeout: .seconds(120))
            let growth = max(try MemoryProbe.peakBytes() - baseline, peakGrowth.withLock { $0 })
            #expect(outcome.error == nil)
            #expect(op.responseData == nil)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.size] as? Int) == size)
            #expect(growth < 32 << 20, "peak memory grew by \(growth >> 20) MiB")
            // Spot-check the bytes at a few offsets, including the last.
            let handle = try #require(FileHandle(forReadingAtPath: path))
            for offset in [0, 65_535, size / 2 + 12_345, size - 1_000] {
                try handle.seek(toOffset: UInt64(offset))
                let chunk = try #require(try handle.read(upToCount: 1000))
                #expect(chunk == TestServer.pattern(offset: offset, count: 1000))
            }
            try handle.close()
        }

        @Test func chunkedBodiesArriveWhole() async throws {
            let op = operation(.chunked(1_000_003))
            #expect(try await run(op).error == nil)
            #expect(op.responseData == TestServer.pattern(count: 1_000_003))
            #expect(op.response?.value(forHTTPHeaderField: "Transfer-Encoding") == "chunked")
        }

        @Test(arguments: ["gzip", "deflate"])
        func compressedBodiesAreDecoded(encoding: String) async throws {
            let op = operation(.gzip(500_000), headers: ["Accept-Encoding": encoding])
            #expect(try await run(op).error == nil)
            #expect(op.response?.value(forHTTPHeaderField: "Content-Encoding") == encoding)
            #expect(op.responseData == TestServer.pattern(count: 500_000))
        }

        @Test func everyEncodingCurlDecodesIsOffered() async throws {
            let headers = try #require(try echoed(try await run(operation(.echo)))["headers"] as? [String: String])
            let offered = Set((headers["accept-encoding"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(offered.isSuperset(of: ["gzip", "deflate", "br", "zstd"]))
        }

        @Test func fileURLsAreRead() async throws {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-\(UUID()).txt")
            defer { try? FileManager.default.removeItem(at: url) }
            let contents = TestServer.pattern(count: 70_000)
            try contents.write(to: url)
            let op = URLConnectionOperation(request: URLRequest(url: url))
            op.configuration.allowedSchemes.insert("file")
            let finished = TestSignal("file operation")
            op.completionBlock = { finished.fire() }
            OperationQueue().addOperation(op)
            try await finished.wait()
            #expect(op.error == nil)
            #expect(op.responseData == contents)
            #expect(op.response?.expectedContentLength == 70_000)
            #expect(!(op.response is HTTPURLResponse))
        }

        @Test func aMissingFileIsReported() async throws {
            let url = URL(fileURLWithPath: "/nonexistent/\(UUID())")
            let op = HTTPRequestOperation(request: URLRequest(url: url))
            op.configuration.allowedSchemes.insert("file")
            #expect(try await run(op).urlErrorCode == .fileDoesNotExist)
        }

        @Test func downloadProgressIsCoalescedAndAddsUp() async throws {
            let size = 8 << 20
            let op = operation(.bytes(size))
            let reports = Mutex<[(Int64, Int64, Int64)]>([])
            op.setDownloadProgressBlock { bytes, total, expected in reports.withLock { $0.append((bytes, total, expected)) } }
            #expect(try await run(op).error == nil)
            let all = reports.withLock { $0 }
            #expect(!all.isEmpty)
            #expect(all.map(\.0).reduce(0, +) == Int64(size))
            #expect(all.last?.1 == Int64(size))
            #expect(all.allSatisfy { $0.2 == Int64(size) })
            // Delivered in order, one at a time, although the default completion queue is concurrent.
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.1 < $1.1 })
            // curl delivers at most 16 KiB per callback: 512 chunks. Coalescing reports fewer.
            #expect(all.count < size / (16 << 10))
        }

        @Test func uploadProgressReportsEveryByte() async throws {
            let body = TestServer.pattern(count: 1 << 20)
            let op = operation(.echo, method: "POST", body: body)
            let sent = Mutex<Int64>(0)
            op.setUploadProgressBlock { bytes, total, expected in
                sent.withLock { $0 += bytes }
                #expect(expected == Int64(body.count))
                #expect(total <= expected)
            }
            #expect(try await run(op).error == nil)
            #expect(sent.withLock { $0 } == Int64(body.count))
        }

        @Test func pauseAndResumeKeepEveryByteInPlace() async throws {
            let size = 16 << 20
            let op = operation(.bytes(size))
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            let pausedOnce = TestSignal("pause")
            op.setDownloadProgressBlock { _, total, _ in
                if total > 2 << 20, pausedOnce.count == 0 {
                    op.pause()
                    pausedOnce.fire()
                }
            }
            OperationQueue().addOperation(op)
            try await pausedOnce.wait()
            #expect(op.isPaused)
            #expect(!op.isExecuting)
            #expect(!op.isFinished)
            op.resume()
            op.resume()
            try await recorder.done.wait()
            #expect(recorder.outcome(of: op)?.error == nil)
            #expect(op.responseData == TestServer.pattern(count: size))
        }

        @Test func cancelWhilePausedFinishesTheOperation() async throws {
            let op = operation(.bytes(32 << 20))
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            let paused = TestSignal("pause")
            op.setDownloadProgressBlock { _, _, _ in
                if paused.count == 0 {
                    op.pause()
                    paused.fire()
                }
            }
            OperationQueue().addOperation(op)
            try await paused.wait()
            op.cancel()
            try await recorder.done.wait()
            #expect(recorder.outcome(of: op)?.urlErrorCode == .cancelled)
            try await waitUntilFinished(op)
            #expect(!op.isPaused)
        }
    }
}
