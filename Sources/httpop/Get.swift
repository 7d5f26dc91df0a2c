import ArgumentParser
import Foundation
import HTTPOperations

/// `httpop get URL`: print a response body.
struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch a URL and print the body to stdout.",
        discussion: "Exits with status 1 and a one-line error on stderr for transport errors and non-2xx responses."
    )

    @Argument(help: "The URL to fetch (http, https or file).")
    var url: String

    @OptionGroup var options: RequestOptions

    @Flag(name: .customShort("i"), help: "Print the status line and response headers before the body.")
    var includeHeaders = false

    func run() throws {
        let request = try options.request(for: url)
        let operation = HTTPRequestOperation(request: request)
        operation.start()
        operation.waitUntilFinished()

        if includeHeaders, let response = operation.response {
            var head = "HTTP \(response.statusCode) \(HTTPURLResponse.localizedString(forStatusCode: response.statusCode))\n"
            for (name, value) in response.allHeaderFields.sorted(by: { "\($0.key)" < "\($1.key)" }) {
                head += "\(name): \(value)\n"
            }
            FileHandle.standardOutput.write(Data((head + "\n").utf8))
        }
        if let body = operation.responseData {
            FileHandle.standardOutput.write(body)
        }
        if let error = operation.error {
            CommandFailure(error).exit()
        }
    }
}

/// The request options `get` and `download` share.
struct RequestOptions: ParsableArguments {
    @Option(name: .customShort("H"), help: ArgumentHelp("A request header, as 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @Option(help: "Idle timeout in seconds.")
    var timeout: Double = 60

    /// A GET request for `url` with these headers and timeout.
    ///
    /// - Throws: `ValidationError` for a URL that is not absolute or a malformed header.
    func request(for url: String) throws -> URLRequest {
        guard let parsed = URL(string: url), parsed.scheme != nil else {
            throw ValidationError("'\(url)' is not an absolute URL")
        }
        var request = URLRequest(url: parsed, timeoutInterval: timeout)
        for header in headers {
            let parts = header.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { throw ValidationError("'\(header)' is not a 'Name: value' header") }
            request.addValue(parts[1].trimmingCharacters(in: .whitespaces), forHTTPHeaderField: String(parts[0]))
        }
        return request
    }
}
