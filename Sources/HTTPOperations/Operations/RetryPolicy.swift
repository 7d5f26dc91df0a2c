import Foundation

/// How a download whose connection drops mid-body resumes itself.
///
/// A retry continues from the bytes held, with `Range` and `If-Range`, under the same rules as
/// ``URLConnectionOperation/resume()``. It is attempted only for failures a new connection can
/// cure (connection lost, a reset HTTP/2 stream, an idle timeout, a server that closed early),
/// and only when the resource has a validator or the method is idempotent.
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt; 0 turns automatic resume off.
    public var maximumRetries: Int
    /// The wait before the first retry.
    public var initialDelay: TimeInterval
    /// Each wait is the previous one times this.
    public var multiplier: Double
    /// No wait is longer than this.
    public var maximumDelay: TimeInterval

    /// Creates a policy.
    public init(maximumRetries: Int, initialDelay: TimeInterval = 0.25, multiplier: Double = 2, maximumDelay: TimeInterval = 8) {
        self.maximumRetries = max(0, maximumRetries)
        self.initialDelay = max(0, initialDelay)
        self.multiplier = max(1, multiplier)
        self.maximumDelay = max(0, maximumDelay)
    }

    /// Three retries, waiting 0.25 s, 0.5 s, then 1 s.
    public static let `default` = RetryPolicy(maximumRetries: 3)

    /// No automatic resume.
    public static let none = RetryPolicy(maximumRetries: 0)

    /// The wait before retry number `attempt` (1 for the first).
    public func delay(beforeRetry attempt: Int) -> TimeInterval {
        min(maximumDelay, initialDelay * pow(multiplier, Double(max(0, attempt - 1))))
    }

    /// Whether `error` is a failure that a new connection may cure.
    static func isRetryable(_ error: URLError) -> Bool {
        [.networkConnectionLost, .timedOut, .badServerResponse, .cannotConnectToHost].contains(error.code)
    }

    /// Methods that may be sent again without changing anything on the server (RFC 9110 §9.2.2).
    static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"]
}

/// How a download got its bytes: what pausing, drops and servers made it do again.
public struct DownloadMetrics: Sendable, Equatable {
    /// Requests that continued from held bytes with `Range` (after a pause or a drop).
    public var resumes = 0
    /// Of those, the ones started automatically after a dropped connection.
    public var automaticResumes = 0
    /// Times a server answered a resume with the whole resource, so held bytes were dropped.
    public var restartsFromZero = 0
    /// Bytes dropped by those restarts, fetched again.
    public var bytesRefetched: Int64 = 0
    /// The offset the first resume continued from.
    public var firstResumeOffset: Int64?

    /// Creates empty metrics.
    public init() {}
}
