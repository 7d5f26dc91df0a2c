import ArgumentParser
import Foundation
import HTTPOperations

/// `httpop download URL -o FILE`: stream a body to a file, resumably.
struct Download: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a URL to a file, streaming it to disk, resumably.",
        discussion: """
        The body is written as it arrives; memory stays flat whatever the size. On Ctrl-C \
        (SIGINT) or SIGTERM the download pauses, saves its resume data beside the file \
        (FILE.httpop-resume) and exits with status 130; the same command continues it with \
        Range and If-Range, and removes the resume data once the file is complete.
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
        let interruption = PauseOnSignals(operation: operation, file: file, display: display)
        operation.start()
        operation.waitUntilFinished()
        interruption.cancel()

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

/// Turns SIGINT and SIGTERM into a pause that saves resume data, then exit status 130.
///
/// Not Sendable: made and cancelled on the thread that runs the command.
final class PauseOnSignals {
    private let sources: [any DispatchSourceSignal]

    init(operation: HTTPRequestOperation, file: URL, display: ProgressDisplay) {
        // A parent may have started us with these blocked (libdispatch's threads block them,
        // and children inherit the mask); a blocked signal would never reach the source.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        sources = [SIGINT, SIGTERM].map { number in
            // Ignored first, so the default action does not end the process before dispatch
            // hears about it.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                operation.pause {
                    let held = operation.resumeData?.offset ?? 0
                    display.interrupt()
                    say(stderr: "paused at byte \(held); resume data saved to "
                        + "\(ResumeData.sidecarURL(for: file).lastPathComponent); run the same command to continue")
                    Foundation.exit(130)
                }
            }
            source.resume()
            return source
        }
    }

    func cancel() {
        sources.forEach { $0.cancel() }
    }
}

/// Writes a line to stderr at once.
func say(stderr line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
