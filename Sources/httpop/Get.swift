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
        let operation: HTTPRequestOperation
        do {
            operation = try options.operation(for: url)
        } catch let error as SecurityError {
            CommandFailure(error).exit()
        }
        operation.start()
        operation.waitUntilFinished()
        RequestOptions.waitForCallbacks()
        options.saveCookies(of: operation)

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
    /// Every callback of the command's operation runs in it (see `waitForCallbacks`).
    static let callbacks = DispatchGroup()

    /// Waits until the operation's callbacks have returned and let go of what they hold: the
    /// library's threads still release the operation's last references just after it
    /// finishes, and a process that exits meanwhile has them mid-release (LeakSanitizer then
    /// reported its body as leaked in 8 runs of 20 under load).
    static func waitForCallbacks() {
        callbacks.wait()
    }

    @Option(name: .customShort("H"), help: ArgumentHelp("A request header, as 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @Option(help: "Idle timeout in seconds.")
    var timeout: Double = 60

    @OptionGroup var tls: TLSOptions

    @OptionGroup var route: RouteOptions

    @Option(name: [.customShort("c"), .customLong("cookie-jar")],
            help: ArgumentHelp("Read cookies from FILE when it exists, send them where they match, and write every cookie back to FILE at the end (Netscape format, as curl and wget).",
                               valueName: "file"))
    var cookieJar: String?

    /// An operation for `url` with these options: headers, timeout, TLS policy; a file: URL
    /// given on the command line is allowed (nothing else reaches files).
    ///
    /// - Throws: `ValidationError`, or ``SecurityError`` for unreadable certificates and bad pins.
    func operation(for url: String) throws -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: try request(for: url))
        try configure(operation)
        return operation
    }

    /// Gives `operation` the TLS policy, the route and the command's completion group (see
    /// `waitForCallbacks`), and allows `file:` when that is what was asked for.
    func configure(_ operation: HTTPRequestOperation) throws {
        operation.securityPolicy = try tls.securityPolicy()
        var configuration = operation.configuration
        configuration.completionGroup = Self.callbacks
        configuration.route = try route.route()
        if let cookieJar {
            configuration.cookieStore = CookieStore(persistingTo: URL(fileURLWithPath: cookieJar))
        }
        if operation.request.url?.isFileURL == true {
            configuration.allowedSchemes.insert("file")
        }
        operation.configuration = configuration
    }

    /// Writes the cookie jar (`--cookie-jar`) once the operation is over, whatever its
    /// outcome: an error response may set cookies too.
    func saveCookies(of operation: HTTPRequestOperation) {
        guard let store = operation.configuration.cookieStore, let file = store.file else { return }
        let saved = DispatchSemaphore(value: 0)
        Task {
            do {
                try await store.save()
            } catch {
                say(stderr: "httpop: the cookie jar \(file.path) was not written: \(error)")
            }
            saved.signal()
        }
        saved.wait()
    }

    /// A GET request for `url` with these headers and timeout, and a `User-Agent` naming
    /// httpop and the library unless `-H` gives one (some APIs refuse requests without one).
    ///
    /// A header with CR, LF or NUL exits with status 1 and a message, before anything is
    /// sent: Foundation would drop it silently and the request would go out without it.
    ///
    /// - Throws: `ValidationError` for a URL that is not absolute or a malformed header.
    func request(for url: String) throws -> URLRequest {
        guard let parsed = URL(string: url), parsed.scheme != nil else {
            throw ValidationError("'\(url)' is not an absolute URL")
        }
        var request = URLRequest(url: parsed, timeoutInterval: timeout)
        request.setValue(Self.userAgent, forHTTPHeaderField: "User-Agent")
        for header in headers {
            if header.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                let shown = header.unicodeScalars.map { $0 == "\r" ? "\\r" : $0 == "\n" ? "\\n" : $0 == "\0" ? "\\0" : String($0) }.joined()
                CommandFailure("error: the header '\(shown)' contains CR, LF or NUL; nothing was sent").exit()
            }
            let parts = header.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { throw ValidationError("'\(header)' is not a 'Name: value' header") }
            let name = String(parts[0])
            if name.caseInsensitiveCompare("User-Agent") == .orderedSame { request.setValue(nil, forHTTPHeaderField: "User-Agent") }
            request.addValue(parts[1].trimmingCharacters(in: .whitespaces), forHTTPHeaderField: name)
        }
        return request
    }

    /// What httpop sends as `User-Agent` unless told otherwise.
    static let userAgent = "httpop/\(httpOperationsVersion) HTTPOperations/\(httpOperationsVersion) (Linux; Swift)"
}
