import CoreMetrics
import Foundation
import Logging
import Synchronization
import Tracing

/// Where users meet the AFNetworking 2.0 model: a base URL, a request serializer, a response
/// serializer, a security policy and an `OperationQueue`, with one method per HTTP verb.
///
/// ```swift
/// let manager = HTTPRequestOperationManager(baseURL: URL(string: "https://api.example/v1"))
/// manager.get("users", parameters: ["page": 2], success: { operation, users in
///     print(users ?? "none")
/// }, failure: { operation, error in
///     print("failed:", error)
/// })
/// ```
///
/// Relative URL strings resolve against ``baseURL`` as `URL(string:relativeTo:)` does, with
/// one convenience kept from AFNetworking 2.0: a base URL whose path lacks a trailing slash
/// gets one, so `https://api.example/v1` + `users` is `https://api.example/v1/users`. A
/// string starting with `/` replaces the base path (`/users` → `https://api.example/users`),
/// and an absolute URL string ignores the base.
///
/// ## Subclassing notes
///
/// Subclass the manager to add endpoints or defaults; override
/// ``httpRequestOperation(with:success:failure:)`` to configure every operation it makes. To
/// make the manager produce your own `HTTPRequestOperation` subclass, set
/// ``operationFactory``.
open class HTTPRequestOperationManager: @unchecked Sendable {
    // @unchecked Sendable: every mutable setting lives in `settings`, behind its Mutex;
    // `baseURL` and `operationQueue` are constants (the queue is thread-safe).

    /// Makes the operation for a request; see ``operationFactory``.
    public typealias OperationFactory = @Sendable (URLRequest) -> HTTPRequestOperation
    /// Called with the operation and its response object.
    public typealias Success = @Sendable (_ operation: HTTPRequestOperation, _ responseObject: Any?) -> Void
    /// Called with the operation (nil when none was made) and the error.
    public typealias Failure = @Sendable (_ operation: HTTPRequestOperation?, _ error: any Error) -> Void

    /// The manager's settings; those its operations get are read and written through
    /// `forOperations` by name (see the subscript).
    @dynamicMemberLookup
    struct Settings {
        var requestSerializer = HTTPRequestSerializer()
        var responseSerializer: any URLResponseSerialization = JSONResponseSerializer()
        /// The settings every operation the manager configures gets, as one shared copy (see
        /// `configure`).
        var forOperations = SharedSettings.defaults
        /// The observer of ``reachabilityManager`` while ``suspendsWhileUnreachable`` is set.
        var reachabilityObserver: Handover<any NSObjectProtocol>?
        /// `.none`: each operation keeps the tracer current where it was made.
        var tracer: (any Tracer)??
        var timeoutInterval: TimeInterval?
        var operationFactory: OperationFactory = { HTTPRequestOperation(request: $0) }
        /// Set by `shutdown`: operations enqueued afterwards are refused.
        var isShutDown = false

        /// The settings its operations get, by name (`settings.logger`, `settings.route`, …):
        /// kept in `forOperations`, so that a change reaches operations made from then on.
        subscript<Value>(dynamicMember field: WritableKeyPath<URLConnectionOperation.Settings, Value>) -> Value {
            get { forOperations.value[keyPath: field] }
            set { forOperations.value[keyPath: field] = newValue }
        }

        /// Sets the credential, and the origin it is for: `baseURL`'s when there is one.
        mutating func setCredential(_ credential: URLCredential?, baseURL: URL?) {
            self.credential = credential
            forOperations.value.credentialOrigin = credential == nil ? nil : baseURL
        }
    }

    let settings = Mutex(Settings())

    /// The URL relative URL strings resolve against.
    public let baseURL: URL?

    /// Watches whether ``baseURL``'s host can be reached (the internet, without a base URL).
    /// Not started until ``suspendsWhileUnreachable`` is set or you call its
    /// `startMonitoring()`.
    public let reachabilityManager: NetworkReachabilityManager

    /// The queue the verb methods enqueue on, owned by the manager. Set its
    /// `maxConcurrentOperationCount` as you need. Its `cancelAllOperations()` and
    /// `waitUntilAllOperationsAreFinished()` include the operations ``enqueue(_:)`` holds until
    /// their dependencies finish; its `operations` and `operationCount` do not (corelibs
    /// Foundation lets no subclass change them): read ``operations`` and ``operationCount``.
    public var operationQueue: OperationQueue { queue }

    /// Every operation the manager has not seen finish: those waiting for their dependencies,
    /// then those on ``operationQueue``.
    public var operations: [Operation] { queue.allOperations }

    /// How many operations ``operations`` lists.
    public var operationCount: Int { queue.allOperationCount }

    /// Holds operations until their dependencies have finished, so Foundation's scheduler
    /// only ever sees ready operations (see ``enqueue(_:)``).
    private let queue = DependencyAwareOperationQueue()

    /// Creates a manager.
    ///
    /// - Parameter baseURL: The URL relative URL strings resolve against; a trailing slash is
    ///   added to its path when missing.
    public init(baseURL: URL? = nil) {
        if let baseURL, !baseURL.path.isEmpty, !baseURL.absoluteString.hasSuffix("/") {
            self.baseURL = baseURL.appendingPathComponent("")
        } else {
            self.baseURL = baseURL
        }
        reachabilityManager = baseURL?.host.map { NetworkReachabilityManager.forDomain($0) } ?? .forInternet()
        queue.name = "HTTPOperations.manager"
    }

    deinit {
        // Started by `suspendsWhileUnreachable`: the observer and the monitoring end with us.
        if let observer = settings.withLock({ $0.reachabilityObserver }) {
            NotificationCenter.default.removeObserver(observer.value)
            reachabilityManager.stopMonitoring()
        }
    }

    // MARK: - Settings

    /// Builds requests. Default: an ``HTTPRequestSerializer`` (query or form body).
    public var requestSerializer: HTTPRequestSerializer {
        get { settings.withLock { $0.requestSerializer } }
        set { settings.withLock { $0.requestSerializer = newValue } }
    }

    /// Validates and decodes responses. Default: a ``JSONResponseSerializer``.
    public var responseSerializer: any URLResponseSerialization {
        get { settings.withLock { $0.responseSerializer } }
        set { settings.withLock { $0.responseSerializer = newValue } }
    }

    /// The policy of every host without one of its own (``setSecurityPolicy(_:forHost:)``).
    /// Default ``SecurityPolicy/default``.
    public var securityPolicy: SecurityPolicy {
        get { settings.withLock { $0.securityPolicies.fallback } }
        set { settings.withLock { $0.securityPolicies.fallback = newValue } }
    }

    /// Gives `host` its own policy (nil: back to ``securityPolicy``). Every operation the
    /// manager makes trusts each host it reaches, redirects included, under that host's
    /// policy only: a lax policy for a development host never applies to another.
    public func setSecurityPolicy(_ policy: SecurityPolicy?, forHost host: String) {
        settings.withLock { $0.securityPolicies.setPolicy(policy, for: host) }
    }

    /// Sets the server-trust block of every operation the manager makes from now on (see
    /// ``URLConnectionOperation/setServerTrustEvaluationBlock(_:)``). Its operations share its
    /// approvals: a server is asked about once for all of them.
    public func setServerTrustEvaluationBlock(_ block: ServerTrustEvaluationBlock?) {
        let evaluation = block.map(ServerTrustEvaluation.init)
        settings.withLock { $0.serverTrustEvaluation = evaluation }
    }

    /// The policy that applies to `host`.
    public func securityPolicy(forHost host: String) -> SecurityPolicy {
        settings.withLock { $0.securityPolicies.policy(for: host) }
    }

    /// Header fields its operations drop when a redirect leaves the origin (see
    /// ``URLConnectionOperation/sensitiveHeaderFields``).
    public var sensitiveHeaderFields: Set<String> {
        get { settings.withLock { $0.sensitiveHeaderFields } }
        set { settings.withLock { $0.sensitiveHeaderFields = Set(newValue.map { $0.lowercased() }) } }
    }

    /// The URL schemes the manager's operations may use: http and https by default (see
    /// ``URLConnectionOperation/allowedSchemes``).
    public var allowedSchemes: Set<String> {
        get { settings.withLock { $0.allowedSchemes } ?? TransferRequest.defaultSchemes }
        set {
            let schemes = TransferRequest.normalized(newValue)
            settings.withLock { $0.allowedSchemes = schemes }
        }
    }

    /// How the manager's operations reach servers: proxy, Unix domain socket, host overrides
    /// (see ``NetworkRoute``). Given to each operation the manager makes.
    public var route: NetworkRoute {
        get { settings.withLock { $0.route } }
        set { settings.withLock { $0.route = newValue } }
    }

    /// The cookies shared by the manager's operations (see ``CookieStore``); nil, the
    /// default, keeps none. Given to each operation the manager makes.
    public var cookieStore: CookieStore? {
        get { settings.withLock { $0.cookieStore } }
        set { settings.withLock { $0.cookieStore = newValue } }
    }

    /// The HTTP cache (RFC 9111) of the manager's operations; nil, the default, caches
    /// nothing. Given to each operation the manager makes.
    ///
    /// Off by default: a server's manager usually speaks for many users and many requests,
    /// and an answer from a cache is an answer the server did not give now. Turn it on where
    /// the responses say how long they stay fresh (`Cache-Control: max-age`, `ETag`) and a
    /// revalidated or fresh copy is what you want. See ``HTTPCache`` for what is stored.
    public var cache: HTTPCache? {
        get { settings.withLock { $0.cache } }
        set { settings.withLock { $0.cache = newValue } }
    }

    /// The queue callbacks run on; nil means a global concurrent queue.
    public var completionQueue: DispatchQueue? {
        get { settings.withLock { $0.completionQueue } }
        set { settings.withLock { $0.completionQueue = newValue } }
    }

    /// A group every callback enters while it runs.
    public var completionGroup: DispatchGroup? {
        get { settings.withLock { $0.completionGroup } }
        set { settings.withLock { $0.completionGroup = newValue } }
    }

    /// Passed to every operation, for Basic or Digest authentication. With a ``baseURL`` it is
    /// sent only to the base URL's origin (scheme, host, port): a request for an absolute URL
    /// elsewhere, or a redirect there, goes without it.
    public var credential: URLCredential? {
        get { settings.withLock { $0.credential } }
        set { settings.withLock { $0.setCredential(newValue, baseURL: baseURL) } }
    }

    /// Where the manager's operations log (see ``URLConnectionOperation/logger``): silent by
    /// default. Each operation gets it when the manager makes it.
    public var logger: Logger {
        get { settings.withLock { $0.logger } }
        set { settings.withLock { $0.logger = newValue } }
    }

    /// The swift-metrics factory the manager's operations report to (see
    /// ``URLConnectionOperation/metricsFactory``): by default the one given to
    /// `MetricsSystem.bootstrap`, or nil when none was; nil reports nothing. Its instruments
    /// are made once, here, and shared by every operation the manager makes afterwards.
    public var metricsFactory: (any MetricsFactory)? {
        get { settings.withLock { $0.metrics?.factory } }
        set {
            let metrics = newValue.flatMap { RequestMetrics(factory: $0) }
            settings.withLock { $0.metrics = metrics }
        }
    }

    /// The tracer of the manager's operations (see ``URLConnectionOperation/tracer``). Until
    /// it is set, each operation takes the tracer current where it is made (the one of
    /// `InstrumentationSystem`, or bound with `withTracer`); set nil to trace nothing.
    public var tracer: (any Tracer)? {
        get { settings.withLock { $0.tracer } ?? RequestTracing.currentTracer }
        set { settings.withLock { $0.tracer = .some(newValue) } }
    }

    /// The total timeout of every operation the manager makes (see
    /// ``URLConnectionOperation/totalTimeout``); nil for none.
    public var totalTimeout: Duration? {
        get { settings.withLock { $0.totalTimeout } }
        set { settings.withLock { $0.totalTimeout = newValue } }
    }

    /// The idle timeout of requests whose serializer sets none. nil keeps `URLRequest`'s 60 s.
    public var timeoutInterval: TimeInterval? {
        get { settings.withLock { $0.timeoutInterval } }
        set { settings.withLock { $0.timeoutInterval = newValue } }
    }

    /// Makes the operation for each request: set it to produce your `HTTPRequestOperation`
    /// subclass. Default `HTTPRequestOperation(request:)`.
    public var operationFactory: OperationFactory {
        get { settings.withLock { $0.operationFactory } }
        set { settings.withLock { $0.operationFactory = newValue } }
    }

    // MARK: - Operations

    /// The absolute URL for `urlString`, resolved against ``baseURL``.
    ///
    /// - Throws: ``RequestSerializationError`` with `.invalidURL`.
    public func url(for urlString: String) throws -> URL {
        guard let url = URL(string: urlString, relativeTo: baseURL)?.absoluteURL, url.scheme != nil else {
            throw RequestSerializationError(.invalidURL(urlString))
        }
        return url
    }

    /// Makes an operation for `request`, configured with this manager's response serializer,
    /// security policy, credential and completion queue and group, without enqueueing it.
    open func httpRequestOperation(with request: URLRequest, success: Success?, failure: Failure?) -> HTTPRequestOperation {
        let operation = settings.withLock { $0.operationFactory }(request)
        configure(operation, success: success, failure: failure)
        return operation
    }

    /// Gives `operation` this manager's serializer, policy, credential, queue and blocks.
    func configure(_ operation: HTTPRequestOperation, success: Success?, failure: Failure?) {
        let settings = settings.withLock { $0 }
        operation.responseSerializer = settings.responseSerializer
        // One lock for what goes to the operation's settings, already normalized here.
        let baseURL = baseURL
        operation.state.withLock { state in
            // The tracer is the state's, beside the settings (see `SpanParent`).
            if let tracer = settings.tracer { state.tracer = tracer }
            // An operation nobody changed takes the manager's settings as they are: one copy
            // shared by all (equal to what the assignments below make of the defaults).
            if state.sharedSettings.isDefaults {
                state.sharedSettings = settings.forOperations
                return
            }
            state.settings.securityPolicies = settings.securityPolicies
            state.settings.allowedSchemes = settings.allowedSchemes
            state.settings.route = settings.route
            state.settings.cookieStore = settings.cookieStore
            state.settings.cache = settings.cache
            state.settings.serverTrustEvaluation = settings.serverTrustEvaluation
            state.settings.totalTimeout = settings.totalTimeout
            state.settings.logger = settings.logger
            state.settings.metrics = settings.metrics
            state.settings.sensitiveHeaderFields = settings.sensitiveHeaderFields
            state.settings.credential = settings.credential
            // The manager's credential is for its base URL's origin, whatever URL a request names.
            if settings.credential != nil, let baseURL { state.settings.credentialOrigin = baseURL }
            state.settings.completionQueue = settings.completionQueue
            state.settings.completionGroup = settings.completionGroup
        }
        var failureBlock: HTTPRequestOperation.FailureBlock?
        if let failure {
            failureBlock = { @Sendable operation, error in failure(operation, error) }
        }
        operation.setCompletionBlockWithSuccess(success, failure: failureBlock)
    }

    /// Enqueues `operation` on ``operationQueue`` — at once when it is ready, or as soon as
    /// every dependency has finished. Foundation's queue re-examines every operation that is
    /// not ready each time one finishes (measured: 13 s for a 10,000-long chain), so the
    /// manager keeps waiting operations to itself.
    ///
    /// Once ``shutdown(gracePeriod:pauseDownloads:stoppingNetworkThread:)`` has begun, the operation is refused
    /// instead: a `URLConnectionOperation` fails with ``TransferError`` `.managerShutDown`,
    /// any other operation is cancelled.
    public func enqueue(_ operation: Operation) {
        // Added under the lock shutdown() marks the manager with: an operation is either in
        // the queue it drains, or refused.
        let accepted = settings.withLock { settings in
            if !settings.isShutDown { queue.addWhenReady(operation) }
            return !settings.isShutDown
        }
        guard accepted else {
            if let operation = operation as? URLConnectionOperation {
                operation.refuse(TransferError(.managerShutDown, url: operation.request.url,
                                               detail: "The manager is shut down: it starts no more operations"))
            } else {
                operation.cancel()
            }
            return
        }
    }

    /// Whether ``shutdown(gracePeriod:pauseDownloads:stoppingNetworkThread:)`` has begun.
    public var isShutDown: Bool { settings.withLock { $0.isShutDown } }

    /// Marks the manager shut down; returns false when it already was.
    func beginShutdown() -> Bool {
        settings.withLock { settings in
            defer { settings.isShutDown = true }
            return !settings.isShutDown
        }
    }

    /// The queue the manager's operations run on, waiting ones included.
    var managedQueue: DependencyAwareOperationQueue { queue }

    /// Builds a request for `method` and enqueues its operation; on a serializer error calls
    /// `failure` on the completion queue and returns nil.
    func perform(_ method: String, _ urlString: String, parameters: Any?,
                 body: ((MultipartFormData) throws -> Void)? = nil,
                 success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        do {
            let request = try makeRequest(method, urlString, parameters: parameters, body: body)
            let operation = httpRequestOperation(with: request, success: success, failure: failure)
            enqueue(operation)
            return operation
        } catch {
            let (queue, group) = settings.withLock { ($0.completionQueue ?? .global(), $0.completionGroup) }
            queue.async(group: group) { failure?(nil, error) }
            return nil
        }
    }

    /// The request for a verb method, from the request serializer.
    func makeRequest(_ method: String, _ urlString: String, parameters: Any?,
                     body: ((MultipartFormData) throws -> Void)? = nil) throws -> URLRequest {
        let url = try url(for: urlString).absoluteString
        let (serializer, timeout) = settings.withLock { ($0.requestSerializer, $0.timeoutInterval) }
        var request: URLRequest
        if let body {
            request = try serializer.multipartFormRequest(method: method, urlString: url,
                                                          parameters: parameters as? [String: Any], constructingBodyWith: body)
        } else {
            request = try serializer.request(method: method, urlString: url, parameters: parameters)
        }
        if let timeout, serializer.timeoutInterval == nil {
            request.timeoutInterval = timeout
        }
        return request
    }
}
