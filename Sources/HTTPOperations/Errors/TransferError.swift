import Foundation

/// A transfer the library stopped, or would not start, to protect the caller: a body larger
/// than allowed, a request that must not be sent twice.
///
/// Compare ``code`` with the static members of ``ErrorCode`` (`error.code == .bodyTooLarge`).
/// Failures of the network itself stay `URLError`s (see Docs/Architecture.md, "Errors").
public struct TransferError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of ``TransferError``.
    public typealias Code = ErrorCode<TransferError>

    /// What went wrong.
    public let code: Code
    /// The URL of the request.
    public let url: URL?
    /// A sentence for logs and people.
    public let detail: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: What went wrong.
    ///   - url: The URL of the request.
    ///   - detail: A sentence for logs and people.
    public init(_ code: Code, url: URL?, detail: String) {
        self.code = code
        self.url = url
        self.detail = detail
    }

    /// The detail, with the URL.
    public var description: String {
        url.map { "\(detail) (\($0.absoluteString))" } ?? detail
    }
}

extension ErrorCode where Domain == TransferError {
    /// The response body is larger than ``URLConnectionOperation/maximumBodySize``; the
    /// transfer was stopped before more of it was held.
    public static var bodyTooLarge: Self { Self("bodyTooLarge") }
    /// Resuming would send a request whose method is not idempotent (POST, PATCH) a second
    /// time; nothing was sent again.
    public static var requestNotResendable: Self { Self("requestNotResendable") }
    /// The connection closed after a request whose method is not idempotent (POST, PATCH) was
    /// sent and before any byte of an answer. The server may or may not have acted on it, so it
    /// was not sent again (libcurl would have, on a fresh connection); the caller decides.
    public static var connectionClosedBeforeAnswer: Self { Self("connectionClosedBeforeAnswer") }
    /// The operation was given to a manager after ``HTTPRequestOperationManager/shutdown(gracePeriod:pauseDownloads:stoppingNetworkThread:)``
    /// began; nothing was sent.
    public static var managerShutDown: Self { Self("managerShutDown") }
    /// The process's network thread was stopped by
    /// ``HTTPRequestOperationManager/shutdown(gracePeriod:pauseDownloads:stoppingNetworkThread:)``;
    /// nothing was sent, and no operation of the process can run any more.
    public static var networkThreadStopped: Self { Self("networkThreadStopped") }
}

extension TransferError {
    /// A body over `limit` (``URLConnectionOperation/maximumBodySize``), from the server or the
    /// cache: one failure, worded once.
    static func bodyTooLarge(limit: Int64, url: URL?) -> TransferError {
        TransferError(.bodyTooLarge, url: url, detail: "The response body is larger than maximumBodySize (\(limit) bytes)")
    }
}
