import ArgumentParser
import Foundation
import HTTPOperations

/// `httpop download URL -o FILE`: stream a body to a file.
struct Download: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a URL to a file, streaming it to disk.",
        discussion: "The body is written as it arrives; memory stays flat whatever the size."
    )

    @Argument(help: "The URL to download.")
    var url: String

    @Option(name: .shortAndLong, help: "The file to write.")
    var output: String

    @OptionGroup var options: RequestOptions

    func run() throws {
        let request = try options.request(for: url)
        guard let stream = OutputStream(toFileAtPath: output, append: false) else {
            throw CommandFailure("error: cannot open \(output) for writing")
        }
        let operation = HTTPRequestOperation(request: request)
        operation.outputStream = stream
        let display = ProgressDisplay(label: (output as NSString).lastPathComponent)
        operation.setDownloadProgressBlock { _, total, expected in
            display.update(total: total, expected: expected)
        }
        operation.start()
        operation.waitUntilFinished()
        let attributes = try? FileManager.default.attributesOfItem(atPath: output)
        display.finish(total: (attributes?[.size] as? Int64) ?? 0, succeeded: operation.error == nil)
        if let error = operation.error {
            CommandFailure(error).exit()
        }
    }
}
