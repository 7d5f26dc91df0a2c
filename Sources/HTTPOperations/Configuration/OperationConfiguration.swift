import CoreMetrics
import Foundation
import Logging

/// What an operation shares with the other operations of its client: where its callbacks run,
/// whom it trusts and authenticates as, how it reaches servers, how long it may take, what it
/// keeps (cookies, cache) and where it logs and reports.
///
/// One value, copied: an operation starts with its manager's
/// ``HTTPRequestOperationManager/defaultConfiguration`` (or with the defaults, when no manager
/// made it), may change its own copy before it starts, and its transfer reads it once, at
/// `start()`. A change after that would not reach the transfer, so it is refused: it fails an
/// assertion in debug builds, and in release builds it is logged as a warning and dropped.
///
/// ```swift
/// var configuration = OperationConfiguration()
/// configuration.totalTimeout = .seconds(30)
/// configuration.route.unixSocketPath = "/run/api.sock"
/// configuration.logger = Logger(label: "api-client")
/// manager.defaultConfiguration = configuration          // every operation made from now on
/// operation.configuration.securityPolicies.setPolicy(pinnedPolicy, for: "payments.example")
/// ```
///
/// What belongs to one request rather than to a client stays on the operation: where the body
/// goes (``URLConnectionOperation/outputStream``, ``URLConnectionOperation/destinationURL``),
/// how a download continues and is checked (``URLConnectionOperation/retryPolicy``,
/// ``URLConnectionOperation/expectedSHA256``, …), ``URLConnectionOperation/maximumRedirects``,
/// ``URLConnectionOperation/cachePartition``, the blocks, and the tracer and service context
/// (read from the task where the operation is made). So is the server-trust block
/// (``URLConnectionOperation/setServerTrustEvaluationBlock(_:)``): assigning a configuration
/// keeps it.
public struct OperationConfiguration: Sendable {
    /// The queue that callbacks run on. nil (the default) means a global concurrent queue: a
    /// server has no main queue that anybody drains.
    public var completionQueue: DispatchQueue?

    /// A group that every callback enters while it runs.
    public var completionGroup: DispatchGroup?

    /// The credential for Basic or Digest authentication; curl negotiates which. It is sent
    /// only to one origin, never to a host a redirect leads to: the request's, or for a
    /// manager with a base URL, the base URL's.
    public var credential: URLCredential?

    /// The longest an operation may take, from `start()` to its outcome: every transfer,
    /// redirect, authentication round, retry wait, block decision and pause included. When it
    /// passes, the operation fails with `URLError(.timedOut)` wherever it is (a download to a
    /// file keeps its bytes and resume data). nil (the default) sets no limit;
    /// `URLRequest.timeoutInterval` stays the idle timeout either way.
    public var totalTimeout: Duration?

    /// How the TLS certificate of each host is trusted (pins, authorities, client certificate;
    /// see Docs/Security.md): a policy per host, and a fallback for every other host. Each
    /// host an operation reaches, redirects included, is trusted under its own policy only,
    /// so a lax policy for one host never reaches another. Default: the system's authorities,
    /// with the chain and the host name verified.
    public var securityPolicies = HostSecurityPolicies()

    /// The URL schemes an operation may use, lower-case: http and https by default. A request
    /// or redirect to any other scheme fails with ``SecurityError`` `.schemeNotAllowed` before
    /// anything is opened; add `"file"` to read local files through an operation. (libcurl is
    /// told the same, `CURLOPT_PROTOCOLS_STR`.)
    public var allowedSchemes: Set<String> {
        get { explicitSchemes ?? TransferRequest.defaultSchemes }
        set { explicitSchemes = TransferRequest.normalized(newValue) }
    }

    /// Header fields that hold secrets (an API key: `X-Api-Key`), dropped from the request when
    /// a redirect leaves its origin, as `Authorization`, `Cookie` and `Proxy-Authorization`
    /// always are. Compared case-insensitively. Default empty.
    public var sensitiveHeaderFields: Set<String> {
        get { lowercasedSensitiveFields }
        set { lowercasedSensitiveFields = Set(newValue.map { $0.lowercased() }) }
    }

    /// How connections reach the server: proxy, Unix domain socket, host overrides (see
    /// ``NetworkRoute``). Default ``NetworkRoute/default`` (the environment's proxies).
    public var route = NetworkRoute.default

    /// The cookies sent and kept (see ``CookieStore``); nil, the default, keeps none. Ignored
    /// for a request whose `httpShouldHandleCookies` is false.
    public var cookieStore: CookieStore?

    /// The HTTP cache (RFC 9111) asked before a request is sent and told of its answer; nil,
    /// the default, caches nothing. The request's `cachePolicy` says how it is used (see
    /// ``HTTPCache``). Only bodies collected in memory are cached.
    ///
    /// Off by default: a server's client usually speaks for many users, and an answer from a
    /// cache is an answer the server did not give now. Turn it on where the responses say how
    /// long they stay fresh (`Cache-Control: max-age`, `ETag`).
    public var cache: HTTPCache?

    /// Where operations log: silent by default. The library logs at `debug` (start, redirect,
    /// retry, resume, outcome: status, bytes, duration, transfers, retries, resumes, error) and
    /// `trace` (timings), under `httpop.` keys with the operation's
    /// ``URLConnectionOperation/requestID``; URLs lose credentials and secret-looking query
    /// values.
    public var logger = Self.silentLogger

    /// The swift-metrics factory operations report to: request counts by method, status class
    /// and kind of error, duration and time to first byte, in-flight operations, bytes,
    /// retries, resumes and connection reuse. Default: the factory given to
    /// `MetricsSystem.bootstrap` (read once), or nil when none was; nil reports nothing. Its
    /// instruments are made when it is set, and shared by every copy of this value.
    public var metricsFactory: (any MetricsFactory)? {
        get { metrics?.factory }
        set { metrics = newValue.flatMap { RequestMetrics(factory: $0) } }
    }

    /// Every configuration's logger until one is set: made once, copied (a retain) per copy.
    static let silentLogger = Logger(label: "HTTPOperations", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The instruments of ``metricsFactory``, made once.
    var metrics = RequestMetrics.bootstrapped

    /// Set through ``allowedSchemes``, normalized; nil: the defaults. The transfer is given
    /// this, not ``allowedSchemes``: nil lets a plain GET skip curl's scheme options.
    var explicitSchemes: Set<String>?

    /// Set through ``sensitiveHeaderFields``, lower-cased.
    private var lowercasedSensitiveFields: Set<String> = []

    /// The origin ``credential`` is for; nil: the request's own. A manager sets its base URL
    /// here (nil without one), so its credential never goes to another origin.
    var credentialOrigin: URL?

    /// The defaults: callbacks on a global queue, no credential, no total timeout, the
    /// system's authorities, http and https, the environment's proxies, no cookies, no cache,
    /// silent logs, the bootstrapped metrics.
    public init() {}
}
