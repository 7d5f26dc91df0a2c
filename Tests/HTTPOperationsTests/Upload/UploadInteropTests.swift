import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import HTTPOperations
import Testing

extension AllTests {
    /// Resumable uploads to a tus server nobody here wrote: tuspyserver under uvicorn
    /// (`Tests/Servers/tus_server.py`). The bytes it stored on disk are compared with the file.
    @Suite(.enabled(if: ExternalServers.tuspyserverInstalled || ExternalServers.required, "tuspyserver is not installed"))
    struct UploadWithTuspyserver {
        /// The collection URL (tuspyserver answers `OPTIONS` only with the trailing slash).
        private var creationURL: URL { URL(string: ExternalServers.tusServer.baseURL + "/files/")! }

        private func configuration(chunkSize: Int = 64 << 10, _ change: (inout UploadConfiguration) -> Void = { _ in }) -> UploadConfiguration {
            var configuration = UploadConfiguration()
            configuration.chunkSize = chunkSize
            configuration.retryDelay = .milliseconds(10)
            // tuspyserver answers an offset request with 400 unless the upload has both.
            configuration.metadata = ["filename": "interop.bin", "filetype": "application/octet-stream"]
            change(&configuration)
            return configuration
        }

        private func stored(_ url: URL?) -> Data? {
            url.flatMap { FileManager.default.contents(atPath: ExternalServers.tusFiles + "/" + $0.lastPathComponent) }
        }

        @Test func aFileArrivesWholeWithCreationWithUploadAndAnExpiry() async throws {
            let run = try UploadRun(size: 300_000, seed: 41)
            let operation = ResumableUploadOperation(request: URLRequest(url: creationURL, timeoutInterval: 10), source: .file(run.file),
                                                     configuration: configuration())
            operation.start()
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(operation.isCompleted)
            #expect(stored(operation.uploadURL) == run.content)
            // A day ahead, as the server was told to keep uploads.
            let expires = try #require(operation.expires)
            #expect(abs(expires.timeIntervalSinceNow - 86_400) < 600)
            // tuspyserver advertises no checksum: none was named.
            #expect(operation.resumeData?.checksumAlgorithm == nil)
        }

        @Test func aRestartedUploadGoesOnFromTheOffsetTheServerReports() async throws {
            let run = try UploadRun(size: 400_000, seed: 42, signalAt: 150_000)
            let first = run.watch(ResumableUploadOperation(request: URLRequest(url: creationURL, timeoutInterval: 10),
                                                           source: .file(run.file), configuration: configuration(chunkSize: 32 << 10)))
            first.start()
            try await run.reached.wait()
            first.cancel()
            try await waitUntilFinished(first)
            let saved = try #require(run.savedResumeData.withLock { $0.last })
            let partial = stored(saved.uploadURL) ?? Data()
            #expect(partial.count < run.content.count)
            #expect(run.content.starts(with: partial))
            let second = ResumableUploadOperation(request: URLRequest(url: creationURL, timeoutInterval: 10),
                                                  resumeData: try UploadResumeData(encoded: saved.encoded()), configuration: configuration())
            second.start()
            try await waitUntilFinished(second)
            #expect(second.error == nil)
            #expect(second.uploadURL == saved.uploadURL)
            #expect(stored(second.uploadURL) == run.content)
        }

        @Test func aCancelThatTerminatesDeletesTheUpload() async throws {
            let run = try UploadRun(size: 300_000, seed: 43, signalAt: 64 << 10)
            let operation = run.watch(ResumableUploadOperation(request: URLRequest(url: creationURL, timeoutInterval: 10),
                                                               source: .file(run.file),
                                                               configuration: configuration(chunkSize: 32 << 10) { $0.terminatesOnCancel = true }))
            operation.start()
            try await run.reached.wait()
            operation.cancel()
            try await waitUntilFinished(operation)
            #expect((operation.error as? URLError)?.code == .cancelled)
            let url = try #require(operation.uploadURL)
            // The server forgot it: its offset request is answered 404.
            var head = URLRequest(url: url)
            head.httpMethod = "HEAD"
            head.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable")
            let probe = HTTPRequestOperation(request: head)
            probe.start()
            try await waitUntilFinished(probe)
            #expect(probe.response?.statusCode == 404)
        }
    }
}
