import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPOperations
import HTTPTestServer
import Synchronization

/// One upload against the test server's upload routes: a collection of its own, a file of
/// seeded bytes, the faults planned, and what the client reported.
final class UploadRun: Sendable {
    let collection = "c\(UUID().uuidString.prefix(8).lowercased())"
    let uploadProtocol: ResumableUploadProtocol
    let file: URL
    let content: Data
    let progress = Mutex<[Int64]>([])
    let savedResumeData = Mutex<[UploadResumeData]>([])
    /// Fired (once) when the progress first reaches ``signalAt``.
    let reached = TestSignal("the upload's progress to reach its mark")
    let signalAt: Int64

    init(size: Int, seed: UInt64 = 1, protocol uploadProtocol: ResumableUploadProtocol = .tus,
         options: UploadStore.Options = UploadStore.Options(), faults: [Int: UploadStore.Fault] = [:],
         signalAt: Int64 = .max) throws {
        self.uploadProtocol = uploadProtocol
        self.signalAt = signalAt
        var generator = SeededGenerator(seed: seed)
        content = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
        file = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID()).bin")
        try content.write(to: file)
        testServer.uploads.configure(collection, options: options, faults: faults)
    }

    deinit { try? FileManager.default.removeItem(at: file) }

    /// The creation endpoint.
    var creationURL: URL {
        testServer.baseURL.appendingPathComponent(uploadProtocol == .tus ? "tus" : "ietf").appendingPathComponent(collection)
    }

    /// Small chunks and short waits, so a test crosses many requests quickly.
    func configuration(chunkSize: Int = 16 << 10, _ change: (inout UploadConfiguration) -> Void = { _ in }) -> UploadConfiguration {
        var configuration = UploadConfiguration()
        configuration.uploadProtocol = uploadProtocol
        configuration.chunkSize = chunkSize
        configuration.retryDelay = .milliseconds(5)
        configuration.maximumRetryDelay = .milliseconds(50)
        configuration.metadata = ["filename": file.lastPathComponent, "filetype": "application/octet-stream"]
        change(&configuration)
        return configuration
    }

    /// An operation uploading the file, keeping its progress and resume data.
    func operation(_ configuration: UploadConfiguration? = nil, source: UploadSource? = nil) -> ResumableUploadOperation {
        watch(ResumableUploadOperation(request: URLRequest(url: creationURL, timeoutInterval: 10), source: source ?? .file(file),
                                       configuration: configuration ?? self.configuration()))
    }

    /// Keeps `operation`'s progress and resume data.
    func watch(_ operation: ResumableUploadOperation) -> ResumableUploadOperation {
        operation.setProgressHandler { [self] _, sent, _ in
            let first = progress.withLock { progress in
                defer { progress.append(sent) }
                return sent >= signalAt && !progress.contains { $0 >= signalAt }
            }
            if first { reached.fire() }
        }
        operation.setResumeDataHandler { [self] data in savedResumeData.withLock { $0.append(data) } }
        return operation
    }

    /// An upload of 100,000 bytes without checksums, started, whose fourth request the server
    /// holds for 300 ms: returned once 32 KiB are acknowledged, so a test can change the file
    /// while the upload is under way.
    static func startedAndHeldMidway() async throws -> (run: UploadRun, operation: ResumableUploadOperation) {
        var options = UploadStore.Options()
        options.checksumAlgorithms = []
        let run = try UploadRun(size: 100_000, options: options, faults: [3: .stall(milliseconds: 300)], signalAt: 32 << 10)
        let operation = run.operation()
        operation.start()
        try await run.reached.wait()
        return (run, operation)
    }

    /// The server's log of this collection's requests.
    var log: [String] { testServer.uploads.log(of: collection) }
    /// The uploads created in this collection.
    var uploads: [UploadStore.Upload] { testServer.uploads.uploads(in: collection) }
}
