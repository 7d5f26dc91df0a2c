import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

/// `totalTimeout`: a limit on the whole operation, where the idle timeout cannot help (a body
/// that keeps trickling, a server that holds its answer, a pause that lasts).
extension AllTests {
    @Suite struct TotalTimeoutTests {
        @Test func aServerThatHoldsItsAnswerIsCutOffAtTheLimit() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.delay(milliseconds: 5_000))))
            op.configuration.totalTimeout = .milliseconds(300)
            let started = ContinuousClock.now
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .timedOut, "\(String(describing: outcome.error))")
            // Before the answer the server would have given at 5 s.
            #expect(ContinuousClock.now - started < .seconds(4))
            #expect((outcome.error as? URLError)?.localizedDescription.contains("total timeout") == true)
        }

        @Test func aBodyThatKeepsTricklingIsCutOffThoughItNeverIdles() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            var options = ResumableOptions()
            options.chunkSize = 1_000
            options.chunkDelayMilliseconds = 20
            let folder = try TemporaryFolder()
            let file = folder.url.appendingPathComponent("trickle.bin")
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.resumable(size: 1_000_000, options: options)),
                                                              timeoutInterval: 1))
            op.destinationURL = file
            op.configuration.totalTimeout = .milliseconds(500)
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .timedOut, "\(String(describing: outcome.error))")
            // What arrived is kept, and so is the resume data to continue it.
            let held = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
            #expect(held > 0 && held < 1_000_000)
            #expect(op.resumeData?.offset == Int64(held))
        }

        @Test func aPauseCountsTowardsTheLimit() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            var options = ResumableOptions()
            options.chunkSize = 1_000
            options.chunkDelayMilliseconds = 20
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.resumable(size: 1_000_000, options: options))))
            op.configuration.totalTimeout = .milliseconds(400)
            let paused = TestSignal("the pause")
            op.setDownloadProgressBlock { _, _, _ in op.pause { paused.fire() } }
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            OperationQueue().addOperation(op)
            try await paused.wait()
            #expect(op.isPaused)
            try await recorder.done.wait(timeout: .seconds(10))
            #expect(recorder.outcome(of: op)?.urlErrorCode == .timedOut)
        }

        @Test func anOperationThatFinishesInTimeIsUntouched() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            manager.defaultConfiguration.totalTimeout = .seconds(30)
            let op = manager.httpRequestOperation(with: URLRequest(url: server.url(.bytes(1000))), success: nil, failure: nil)
            #expect(op.configuration.totalTimeout == .seconds(30))
            #expect(try await run(op).error == nil)
        }
    }
}
