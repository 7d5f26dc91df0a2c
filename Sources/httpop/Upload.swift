import ArgumentParser
import Foundation
import HTTPOperations
import Synchronization

/// `httpop upload FILE URL`: upload a file resumably (tus 1.0 or the IETF draft).
struct Upload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload a file resumably, with tus 1.0 or the IETF resumable-upload draft.",
        discussion: """
        URL is the server's creation endpoint (tus: its upload collection). The file is read in \
        chunks (--chunk-size), so memory stays flat whatever its size; after a dropped \
        connection the server's offset is asked and the upload goes on from there. The resume \
        data (the upload's URL, the file's size, modification time and SHA-256, the offset the \
        server confirmed) is written to the state file (FILE.httpop-upload unless --state) before \
        every request that sends bytes. On Ctrl-C (SIGINT) or SIGTERM the upload stops, the state \
        file stays and the command exits with status 130; the same command continues the upload \
        (a file that changed since is refused). Once complete, the state file is removed and the \
        upload's URL is printed. After an error the upload cannot recover from (a changed file, \
        an upload gone from the server, an answer that breaks the protocol) the state file is \
        removed too; after failures in a row it stays, for the next run.
        """
    )

    @Argument(help: "The file to upload.")
    var file: String

    @Argument(help: "The creation endpoint.")
    var url: String

    @Option(name: .customLong("protocol"), help: "tus or ietf-draft (draft-ietf-httpbis-resumable-upload-05).")
    var uploadProtocol: String = "tus"

    @Option(help: "The most bytes one request carries.")
    var chunkSize: Int = 4 << 20

    @Option(help: ArgumentHelp("Keep the resume data in FILE (default: the upload's file + .httpop-upload).", valueName: "file"))
    var state: String?

    @Option(name: .customLong("metadata"), help: ArgumentHelp("tus Upload-Metadata, as key=value. Repeatable.", valueName: "pair"))
    var metadata: [String] = []

    @Flag(help: "On Ctrl-C, delete the upload on the server instead of keeping it to continue.")
    var terminateOnCancel = false

    @OptionGroup var options: RequestOptions

    func validate() throws {
        guard ["tus", "ietf-draft"].contains(uploadProtocol) else { throw ValidationError("--protocol is tus or ietf-draft") }
        if chunkSize < 1 { throw ValidationError("--chunk-size must be at least 1") }
        for pair in metadata where !pair.contains("=") { throw ValidationError("--metadata takes key=value, not '\(pair)'") }
    }

    func run() throws {
        let fileURL = URL(fileURLWithPath: file).standardizedFileURL
        let stateURL = URL(fileURLWithPath: state ?? fileURL.path + ".httpop-upload")
        let request = try options.request(for: url)
        let template = HTTPRequestOperation(request: request)
        try options.configure(template)
        let connectionConfiguration = template.configuration

        var configuration = UploadConfiguration()
        configuration.uploadProtocol = uploadProtocol == "tus" ? .tus : .ietfDraft
        configuration.chunkSize = chunkSize
        configuration.terminatesOnCancel = terminateOnCancel
        configuration.metadata = ["filename": fileURL.lastPathComponent]
        for pair in metadata {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            configuration.metadata[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        let saved = try? UploadResumeData(encoded: Data(contentsOf: stateURL))
        if let saved, saved.fileURL.standardizedFileURL != fileURL {
            throw ValidationError("the state file \(stateURL.path) is another file's upload (\(saved.fileURL.path))")
        }
        let configure: @Sendable (HTTPRequestOperation) -> Void = { $0.configuration = connectionConfiguration }
        let operation = if let saved {
            ConfiguredUpload(request: request, resumeData: saved, configuration: configuration, configure: configure)
        } else {
            ConfiguredUpload(request: request, source: .file(fileURL), configuration: configuration, configure: configure)
        }
        if let saved {
            say(stderr: "resuming \(saved.uploadURL.absoluteString) (\(saved.acknowledgedOffset) bytes confirmed before; saved resume data)")
        }
        operation.setResumeDataHandler { data in
            do {
                try data.encoded().write(to: stateURL, options: .atomic)
            } catch {
                CommandFailure("error: the state file \(stateURL.path) was not written: \(error)").exit()
            }
        }
        let display = ProgressDisplay(label: fileURL.lastPathComponent)
        operation.setProgressHandler { _, sent, total in display.update(total: sent, expected: total) }

        // A signal cancels the upload; what follows its end says what was kept.
        let signals = SignalWatch { operation.cancel() }
        operation.start()
        operation.waitUntilFinished()
        signals.cancel()
        if signals.wasSignalled {
            display.interrupt()
            if !terminateOnCancel, let data = operation.resumeData {
                try data.encoded().write(to: stateURL, options: .atomic)
                say(stderr: "stopped at byte \(data.acknowledgedOffset) (confirmed by the server); resume data saved to "
                    + "\(stateURL.lastPathComponent); run the same command to continue")
            } else if terminateOnCancel, operation.uploadURL != nil {
                if operation.isTerminated {
                    try? FileManager.default.removeItem(at: stateURL)
                    say(stderr: "stopped; the upload was deleted on the server")
                } else {
                    say(stderr: "stopped; the server did not confirm the upload's deletion (the state file is kept)")
                }
            } else {
                try? FileManager.default.removeItem(at: stateURL)
                say(stderr: "stopped before the upload existed")
            }
            Foundation.exit(130)
        }
        RequestOptions.waitForCallbacks()
        options.saveCookies(of: template)
        display.finish(total: operation.acknowledgedOffset, succeeded: operation.isCompleted)
        if operation.isCompleted {
            try? FileManager.default.removeItem(at: stateURL)
            print(operation.uploadURL?.absoluteString ?? "")
            return
        }
        if let error = operation.error as? UploadError, error.code != .retriesExhausted {
            // The upload cannot go on (the file changed, the upload is gone, the server broke the
            // protocol): the next run starts a new one. After failures in a row, the state stays.
            try? FileManager.default.removeItem(at: stateURL)
        }
        CommandFailure(operation.error ?? URLError(.unknown)).exit()
    }
}

/// An upload whose every request gets the command's TLS, route and cookie options: the
/// subclassing hook ``ResumableUploadOperation/connectionOperation(for:)`` at work.
final class ConfiguredUpload: ResumableUploadOperation, @unchecked Sendable {
    // @unchecked Sendable: its one stored property is an immutable Sendable closure.
    private let configure: @Sendable (HTTPRequestOperation) -> Void

    init(request: URLRequest, source: UploadSource, configuration: UploadConfiguration,
         configure: @escaping @Sendable (HTTPRequestOperation) -> Void) {
        self.configure = configure
        super.init(request: request, source: source, configuration: configuration)
    }

    init(request: URLRequest, resumeData: UploadResumeData, configuration: UploadConfiguration,
         configure: @escaping @Sendable (HTTPRequestOperation) -> Void) {
        self.configure = configure
        super.init(request: request, resumeData: resumeData, configuration: configuration)
    }

    override func connectionOperation(for request: URLRequest) -> HTTPRequestOperation {
        let connection = super.connectionOperation(for: request)
        configure(connection)
        return connection
    }
}
