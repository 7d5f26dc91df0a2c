import Foundation

/// The public error for each failure ``TransferStateMachine`` decides: a `URLError` users
/// know for the transport and for answers that are not HTTP, and the library's own typed
/// errors for the rest (Docs/Architecture.md, "Errors").
extension TransferDriver {
    /// The public error for a failure the machine decided.
    func error(for failure: TransferStateMachine.Failure) -> any Error {
        switch failure {
        case .transport(let error), .write(let error):
            return error
        case .resume(let reason):
            return ResumeError(reason, response: head.map { $0.httpURLResponse(for: request.url!) })
        case .provisionalBodyTooLarge(let limit):
            return URLError(.dataLengthExceedsMaximum, url: request.url,
                            description: "A redirect, challenge or error body exceeded \(limit) bytes.")
        case .bodyTooLarge(let limit):
            return TransferError.bodyTooLarge(limit: limit, url: request.url)
        case .tooManyRedirects(let limit):
            return URLError(.httpTooManyRedirects, url: request.url, description: "More than \(limit) redirects.")
        case .malformedStatus(let status):
            return URLError(.badServerResponse, url: request.url,
                            description: "The response's status code \(status) is not an HTTP status code (100–999).")
        case .notHTTP:
            return URLError(.badServerResponse, url: request.url,
                            description: "The response is not HTTP: its status line does not start with HTTP/.")
        case .conflictingContentLength:
            return URLError(.badServerResponse, url: request.url,
                            description: "The response names more than one Content-Length.")
        case .serverTrustRefused:
            return SecurityError(.serverTrustRefused(host: request.url?.host ?? ""), url: request.url)
        case .notResendable:
            return TransferError(.requestNotResendable, url: request.url,
                                 detail: "A paused \(request.httpMethod ?? "POST") request cannot be resumed: it would be sent twice")
        }
    }
}
