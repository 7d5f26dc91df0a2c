import Foundation
import Logging
import Synchronization

/// What the library logs, and how: at `debug` and `trace` only, as AsyncHTTPClient does —
/// every failure is also handed to the caller, who decides whether it is worth a warning —
/// through the logger the operation was given (silent unless set). Keys start with
/// `httpop.`; URLs lose their `user:password@` and the values of query parameters that look
/// like secrets.
enum RequestLogging {
    /// Metadata keys.
    static let requestIDKey = "httpop.request.id"
    static let methodKey = "httpop.request.method"
    static let urlKey = "httpop.request.url"
    static let statusKey = "httpop.response.status"
    static let bytesKey = "httpop.response.bytes"
    static let durationKey = "httpop.duration"
    static let transfersKey = "httpop.transfers"
    static let retriesKey = "httpop.retries"
    static let resumesKey = "httpop.resumes"
    static let errorKey = "httpop.error"

    /// Query parameters whose values are replaced by `redacted` in logs (compared
    /// case-insensitively, also as a suffix: `x_api_key`, `session_token`).
    static let secretQueryNames = ["token", "key", "secret", "password", "passwd", "signature", "sig", "auth", "credential",
                                   "code"]

    /// A request id unique in the process: `httpop-` and a counter in hex.
    static func nextRequestID() -> String {
        "httpop-" + String(counter.add(1, ordering: .relaxed).newValue, radix: 16)
    }

    private static let counter = Atomic<Int>(0)

    /// `url` as it may be logged.
    static func redacted(_ url: URL?) -> String {
        guard let url else { return "" }
        // Most URLs carry neither: no URLComponents round trip for them (it costs microseconds
        // on every traced or logged request).
        if url.user == nil, url.password == nil, url.query == nil { return url.absoluteString }
        let withoutUserInfo = ResumeData.withoutUserInfo(url)
        guard var components = URLComponents(url: withoutUserInfo, resolvingAgainstBaseURL: false) else {
            return withoutUserInfo.absoluteString
        }
        if let items = components.queryItems, !items.isEmpty {
            components.queryItems = items.map { item in
                let name = item.name.lowercased()
                let secret = secretQueryNames.contains { name == $0 || name.hasSuffix("_" + $0) || name.hasSuffix("-" + $0) }
                return secret ? URLQueryItem(name: item.name, value: "redacted") : item
            }
        }
        return components.url?.absoluteString ?? withoutUserInfo.absoluteString
    }

    /// `logger` with the request's id, method and redacted URL as metadata — only when it
    /// logs at `debug` or below: a silent logger (the default) costs no string.
    static func logger(_ logger: Logger, requestID: String, request: URLRequest) -> Logger {
        guard logger.logLevel <= .debug else { return logger }
        var logger = logger
        logger[metadataKey: requestIDKey] = "\(requestID)"
        logger[metadataKey: methodKey] = "\(request.httpMethod ?? "GET")"
        logger[metadataKey: urlKey] = "\(redacted(request.url))"
        return logger
    }
}
