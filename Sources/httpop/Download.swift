import ArgumentParser
import Foundation
import HTTPOperations
import Synchronization

/// `httpop download URL -o FILE`: stream a body to a file, resumably.
struct Download: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a URL to a file, streaming it to disk, resumably.",
        discussion: """
        The body is written as it arrives; memory stays flat whatever the size. On Ctrl-C \
        (SIGINT) or SIGTERM the manager shuts down: the download pauses, saves its resume data \
        beside the file (FILE.httpop-resume) and the command exits with status 130; the same \
        command continues it with Range and If-Range, and removes the resume data once the file is complete.
        """
    )

    @Argument(help: "The URL to download.")
    var url: String

    @Option(name: .shortAndLong, help: "The file to write.")
    var output: String

    @OptionGroup var options: RequestOptions

    @Flag(name: [.customShort("C"), .customLong("continue")],
          help: "Continue from the size of an existing FILE even without resume data (Range only, as curl -C -).")
    var continueExisting = false

    @Option(name: .customLong("sha256"), help: ArgumentHelp("The SHA-256 the complete file must have, as hex.", valueName: "hex"))
    var sha256: String?

    func run() throws {
        let request = try options.request(for: url)
        let file = URL(fileURLWithPath: output)
        let (operation, resumingFrom) = HTTPRequestOperation.download(request, to: file)
        do {
            try options.configure(operation)
        } catch let error as SecurityError {
            CommandFailure(error).exit()
        }
        let held = ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int64) ?? 0
        if resumingFrom != nil {
            say(stderr: "resuming \(file.lastPathComponent) from byte \(held) (saved resume data)")
        } else if continueExisting, held > 0 {
            operation.resumesExistingFile = true
            say(stderr: "continuing \(file.lastPathComponent) from byte \(held) (no resume data: Range only)")
        }
        if let sha256 {
            guard sha256.count == 64, sha256.allSatisfy(\.isHexDigit) else {
                throw ValidationError("--sha256 takes 64 hexadecimal digits")
            }
            operation.expectedSHA256 = sha256
        }

        let display = ProgressDisplay(label: file.lastPathComponent)
        operation.setDownloadProgressBlock { _, total, expected in
            display.update(total: total, expected: expected)
        }
        // Run by a manager, so that a signal shuts it down the way a server would.
        let manager = HTTPRequestOperationManager()
        let interruption = ShutDownOnSignals(manager: manager, file: file, display: display)
        manager.enqueue(operation)
        operation.waitUntilFinished()
        RequestOptions.waitForCallbacks()
        // A signal finishes the operation cancelled; the handler reports and exits.
        interruption.exitIfShuttingDown()
        interruption.cancel()
        options.saveCookies(of: operation)

        let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
        display.finish(total: (attributes?[.size] as? Int64) ?? 0, succeeded: operation.error == nil)
        if let offset = operation.downloadMetrics.firstResumeOffset, operation.error == nil {
            say(stderr: "resumed from byte \(offset); \(operation.downloadMetrics.resumes) resume(s), "
                + "\(operation.downloadMetrics.restartsFromZero) restart(s) from zero")
        }
        if let error = operation.error {
            CommandFailure(error).exit()
        }
    }
}

/// Turns SIGINT and SIGTERM into the manager's shutdown: the download pauses, its resume data
/// is saved beside the file, and the process exits with status 130.
///
/// Not Sendable: made and cancelled on the thread that runs the command.
final class ShutDownOnSignals {
    private let watch: SignalWatch

    init(manager: HTTPRequestOperationManager, file: URL, display: ProgressDisplay) {
        watch = SignalWatch {
            // The process exits next: the network thread is stopped too, which closes the
            // connections curl keeps.
            let report = await manager.shutdown(gracePeriod: .zero, pauseDownloads: true, stoppingNetworkThread: true)
            display.interrupt()
            if let saved = report.pausedDownloads.first {
                say(stderr: "paused at byte \(saved.offset); resume data saved to "
                    + "\(ResumeData.sidecarURL(for: file).lastPathComponent); run the same command to continue")
            } else {
                say(stderr: "stopped before the download was under way; run the same command to start it")
            }
            if report.networkThreadStopped { say(stderr: "network thread stopped") }
            Foundation.exit(130)
        }
    }

    /// After a signal, waits for the handler to exit the process; returns at once otherwise.
    func exitIfShuttingDown() { watch.waitIfSignalled() }

    func cancel() { watch.cancel() }
}

/// Writes a line to stderr at once.
func say(stderr line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
