import Foundation

/// When an operation sends its request again by itself, and how long it waits first.
///
/// Always: a download whose connection drops mid-body of a good answer continues from the
/// bytes held, with `Range` and `If-Range`, under the same rules as
/// ``URLConnectionOperation/resume()`` (connection lost, a reset HTTP/2 stream, an idle
/// timeout, a server that closed early).
///
/// When asked (``retriesConnectionFailures``, ``retryableStatusCodes``, as
/// ``transientFailures`` does): a connection that could not be made or a host that did not
/// resolve, and answers such as 503 — whose body is held aside, never mixed into the body,
/// and whose `Retry-After` is honoured.
///
/// Only idempotent methods are sent again (RFC 9110 §9.2.2), unless
/// ``retriesNonIdempotentRequests``. Waits grow by ``multiplier`` from ``initialDelay`` up to
/// ``maximumDelay``, vary by ± ``jitter``, and stop when they would add up to more than
/// ``maximumTotalDelay``. Retries run on a timer, never on the network thread's time.
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt; 0 turns automatic resume off.
    public var maximumRetries: Int
    /// The wait before the first retry.
    public var initialDelay: TimeInterval
    /// Each wait is the previous one times this.
    public var multiplier: Double
    /// No wait is longer than this (a longer `Retry-After` is not waited for: the answer is
    /// the outcome).
    public var maximumDelay: TimeInterval
    /// Each wait is multiplied by a random factor in `1 ± jitter`, so that clients that failed
    /// together do not come back together. 0 for exact waits.
    public var jitter: Double
    /// No retry whose wait would bring the waits of the operation past this.
    public var maximumTotalDelay: TimeInterval
    /// Retry when the connection could not be made or the host did not resolve (nothing was
    /// sent).
    public var retriesConnectionFailures: Bool
    /// Answer statuses retried; their bodies are never the body of the download.
    public var retryableStatusCodes: Set<Int>
    /// Send POST, PATCH and other non-idempotent requests again too. Only for requests the
    /// server treats as idempotent (an idempotency key, say).
    public var retriesNonIdempotentRequests: Bool

    /// Creates a policy.
    public init(maximumRetries: Int, initialDelay: TimeInterval = 0.25, multiplier: Double = 2, maximumDelay: TimeInterval = 8,
                jitter: Double = 0, maximumTotalDelay: TimeInterval = 60, retriesConnectionFailures: Bool = false,
                retryableStatusCodes: Set<Int> = [], retriesNonIdempotentRequests: Bool = false) {
        self.maximumRetries = max(0, maximumRetries)
        self.initialDelay = max(0, initialDelay)
        self.multiplier = max(1, multiplier)
        self.maximumDelay = max(0, maximumDelay)
        self.jitter = min(max(0, jitter), 1)
        self.maximumTotalDelay = max(0, maximumTotalDelay)
        self.retriesConnectionFailures = retriesConnectionFailures
        self.retryableStatusCodes = retryableStatusCodes
        self.retriesNonIdempotentRequests = retriesNonIdempotentRequests
    }

    /// Also retries transient failures: connections that could not be made, hosts that did
    /// not resolve, and 408, 429, 502, 503, 504 (honouring `Retry-After`); three retries,
    /// waits from 0.5 s doubling up to 8 s with ±20% jitter, 30 s of waiting at most.
    public static let transientFailures = RetryPolicy(
        maximumRetries: 3, initialDelay: 0.5, multiplier: 2, maximumDelay: 8, jitter: 0.2, maximumTotalDelay: 30,
        retriesConnectionFailures: true, retryableStatusCodes: [408, 429, 502, 503, 504])

    /// Three retries, waiting 0.25 s, 0.5 s, then 1 s.
    public static let `default` = RetryPolicy(maximumRetries: 3)

    /// No automatic resume.
    public static let none = RetryPolicy(maximumRetries: 0)

    /// The wait before retry number `attempt` (1 for the first), before jitter.
    public func delay(beforeRetry attempt: Int) -> TimeInterval {
        min(maximumDelay, initialDelay * pow(multiplier, Double(max(0, attempt - 1))))
    }

    /// `delay` varied by `jitter`, with `random` in 0...1.
    func jittered(_ delay: TimeInterval, random: Double) -> TimeInterval {
        max(0, delay * (1 + jitter * (2 * random - 1)))
    }

    /// Whether `error` is a failure that a new connection may cure mid-body.
    static func isRetryable(_ error: URLError) -> Bool {
        [.networkConnectionLost, .timedOut, .badServerResponse, .cannotConnectToHost].contains(error.code)
    }

    /// Whether `error` says nothing was sent: no connection, or no address.
    static func isConnectionFailure(_ error: URLError) -> Bool {
        [.cannotConnectToHost, .cannotFindHost, .dnsLookupFailed].contains(error.code)
    }

    /// The wait a `Retry-After` value asks for: delta-seconds, or an HTTP-date (RFC 9110
    /// §10.2.3) measured from `now`; nil when it is neither.
    static func retryAfter(_ value: String, now: Date = Date()) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = HTTPDecimal.parse(text) { return TimeInterval(seconds) }
        return HTTPDate.parse(text).map { max(0, $0.timeIntervalSince(now)) }
    }
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
