import ArgumentParser
import Foundation
import HTTPOperations

/// `httpop`: HTTP from the command line, through HTTPOperations.
@main
struct HTTPOp: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "httpop",
        abstract: "HTTP requests and downloads through HTTPOperations (libcurl on one network thread).",
        subcommands: [Get.self, Download.self, Upload.self, Events.self, Demo.self]
    )
}

/// Failures the CLI reports as one line on stderr, with a non-zero exit status.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32

    init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }

    /// A one-line account of why `operation` failed.
    init(_ error: any Error) {
        switch error {
        case let error as URLError:
            let detail = error.curlError.map { " (\($0))" } ?? ""
            self.init("error: \(error.code.name)\(detail)")
        case let error as ResponseValidationError:
            self.init("error: \(error)")
        default:
            self.init("error: \(error)")
        }
    }
}

extension CommandFailure {
    /// Prints the message on stderr and exits.
    func exit() -> Never {
        FileHandle.standardError.write(Data((description + "\n").utf8))
        Foundation.exit(exitCode)
    }
}

extension URLError.Code {
    /// A readable name for the codes a transfer can fail with.
    var name: String {
        switch self {
        case .timedOut: "timed out"
        case .cannotConnectToHost: "cannot connect to host"
        case .cannotFindHost: "cannot find host"
        case .networkConnectionLost: "connection lost"
        case .secureConnectionFailed: "secure connection failed"
        case .serverCertificateUntrusted: "server certificate untrusted"
        case .badURL: "bad URL"
        case .unsupportedURL: "unsupported URL"
        case .cancelled: "cancelled"
        case .httpTooManyRedirects: "too many redirects"
        case .badServerResponse: "bad server response"
        case .fileDoesNotExist: "file does not exist"
        case .cannotWriteToFile: "cannot write to file"
        default: "URL error \(rawValue)"
        }
    }
}
