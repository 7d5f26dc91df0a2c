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

    /// The manager's settings, behind one lock.
    struct Settings {
        var requestSerializer: any URLRequestSerialization = HTTPRequestSerializer()
        var responseSerializer = ChosenResponseSerializer(own: JSONResponseSerializer())
        /// What every operation the manager configures gets, as one shared copy (see
        /// `configure`): ``defaultConfiguration``, beside defaults for the rest.
        var forOperations = SharedSettings.defaults
        /// The observer of ``reachabilityManager`` while ``suspendsWhileUnreachable`` is set.
        var reachabilityObserver: Handover<any NSObjectProtocol>?
        /// `.none`: each operation keeps the tracer current where it was made.
        var tracer: (any Tracer)??
        var operationFactory: OperationFactory = { HTTPRequestOperation(request: $0) }
        /// Set by `shutdown`: operations enqueued afterwards are refused.
        var isShutDown = false
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
    ///
    /// Serializers are values: to change a setting, change a copy and set it back
    /// (`var serializer = HTTPRequestSerializer(bodyEncoding: .json())`, then
    /// `serializer.setValue(…)`, then `manager.requestSerializer = serializer`).
    public var requestSerializer: any URLRequestSerialization {
        get { settings.withLock { $0.requestSerializer } }
        set { settings.withLock { $0.requestSerializer = newValue } }
    }

    /// Validates and decodes responses. Default: a ``JSONResponseSerializer``.
    public var responseSerializer: any URLResponseSerialization {
        get { settings.withLock { $0.responseSerializer.serializer } }
        set {
            let chosen = ChosenResponseSerializer(newValue)
            settings.withLock { $0.responseSerializer = chosen }
        }
    }

    /// What every operation the manager makes from now on starts with: completion queue and
    /// group, credential, total timeout, security policies, schemes, sensitive fields, route,
    /// cookies, cache, logger and metrics (see ``OperationConfiguration``). Operations made
    /// before keep what they got. With a ``baseURL``, the credential goes only to the base
    /// URL's origin (scheme, host, port): a request for an absolute URL elsewhere, or a
    /// redirect there, goes without it; without a base URL, to each request's own origin.
    ///
    /// Reading and writing it take the manager's lock once each: `defaultConfiguration.x = y`
    /// from two threads at once may lose one change. Configure a manager before sharing it, or
    /// use the single-field setters (``credential``, ``securityPolicy``, …), which are atomic.
    public var defaultConfiguration: OperationConfiguration {
        get { settings.withLock { $0.forOperations.value.configuration } }
        set { changeDefaults { $0 = newValue } }
    }

    /// Changes ``defaultConfiguration`` in one lock. Whatever the change, the credential is
    /// for this manager's origin: its base URL's, or with none, each request's own (nil).
    func changeDefaults(_ change: (inout OperationConfiguration) -> Void) {
        let baseURL = baseURL
        settings.withLock { settings in
            change(&settings.forOperations.value.configuration)
            let hasCredential = settings.forOperations.value.configuration.credential != nil
            settings.forOperations.value.configuration.credentialOrigin = hasCredential ? baseURL : nil
        }
    }

    /// The policy of every host without one of its own (``setSecurityPolicy(_:forHost:)``):
    /// the fallback of the configuration's ``OperationConfiguration/securityPolicies``.
    /// Default ``SecurityPolicy/default``.
    public var securityPolicy: SecurityPolicy {
        get { defaultConfiguration.securityPolicies.fallback }
        set { changeDefaults { $0.securityPolicies.fallback = newValue } }
    }

    /// Gives `host` its own policy (nil: back to ``securityPolicy``). Every operation the
    /// manager makes trusts each host it reaches, redirects included, under that host's
    /// policy only: a lax policy for a development host never applies to another.
    public func setSecurityPolicy(_ policy: SecurityPolicy?, forHost host: String) {
        changeDefaults { $0.securityPolicies.setPolicy(policy, for: host) }
    }

    /// Sets the server-trust block of every operation the manager makes from now on (see
    /// ``URLConnectionOperation/setServerTrustEvaluationBlock(_:)``). Its operations share its
    /// approvals: a server is asked about once for all of them.
    public func setServerTrustEvaluationBlock(_ block: ServerTrustEvaluationBlock?) {
        let evaluation = block.map(ServerTrustEvaluation.init)
        settings.withLock { $0.forOperations.value.serverTrustEvaluation = evaluation }
    }

    /// The policy that applies to `host`.
    public func securityPolicy(forHost host: String) -> SecurityPolicy {
        defaultConfiguration.securityPolicies.policy(for: host)
    }

    /// The queue callbacks run on (``OperationConfiguration/completionQueue``); nil means a
    /// global concurrent queue.
    public var completionQueue: DispatchQueue? {
        get { defaultConfiguration.completionQueue }
        set { changeDefaults { $0.completionQueue = newValue } }
    }

    /// A group every callback enters while it runs (``OperationConfiguration/completionGroup``).
    public var completionGroup: DispatchGroup? {
        get { defaultConfiguration.completionGroup }
        set { changeDefaults { $0.completionGroup = newValue } }
    }

    /// Passed to every operation, for Basic or Digest authentication
    /// (``OperationConfiguration/credential``). With a ``baseURL`` it is sent only to the base
    /// URL's origin (scheme, host, port): a request for an absolute URL elsewhere, or a
    /// redirect there, goes without it.
    public var credential: URLCredential? {
        get { defaultConfiguration.credential }
        set { changeDefaults { $0.credential = newValue } }
    }

    /// The tracer of the manager's operations (see ``URLConnectionOperation/tracer``). Until
    /// it is set, each operation takes the tracer current where it is made (the one of
    /// `InstrumentationSystem`, or bound with `withTracer`); set nil to trace nothing.
    public var tracer: (any Tracer)? {
        get { settings.withLock { $0.tracer } ?? RequestTracing.currentTracer }
        set { settings.withLock { $0.tracer = .some(newValue) } }
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
        operation.setResponseSerializer(settings.responseSerializer)
        operation.adoptClientSettings(settings.forOperations, tracer: settings.tracer)
        var failureBlock: HTTPRequestOperation.FailureBlock?
        if let failure {
            failureBlock = { @Sendable operation, error in failure(operation, error) }
        }
        operation.setCompletionBlockWithSuccess(success, failure: failureBlock)
    }

    /// Enqueues `operation` on ``operationQueue`` — at once when it is ready, or as soon as
    /// every dependency has finished. Foundation's queue re-examines every operation that is
    /// not ready each time one finishes (quadratic in a chain's length: Docs/Architecture.md),
    /// so the manager keeps waiting operations to itself.
    ///
    /// Once ``shutdown(gracePeriod:pauseDownloads:stoppingNetworkThread:)`` has begun, the operation is refused
    /// instead: a `URLConnectionOperation` fails with ``TransferError`` `.managerShutDown`, a
    /// batch's completion runs once they ended (see ``batch(of:progress:completion:)``), any
    /// other operation is cancelled.
    public func enqueue(_ operation: Operation) {
        // Added under the lock shutdown() marks the manager with: an operation is either in
        // the queue it drains, or refused.
        let accepted = settings.withLock { settings in
            if !settings.isShutDown { queue.addWhenReady(operation) }
            return !settings.isShutDown
        }
        guard accepted else {
            if operation.name == Self.batchCompletionName {
                // A batch's completion: its operations are refused as well, and it reports them once
                // they finished (never cancelled: a caller waits on it).
                Self.refusedBatchCompletions.addOperation(operation)
            } else if let refusable = operation as? any RefusableOperation {
                refusable.refuse(TransferError(.managerShutDown, url: refusable.request.url,
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
            let configuration = defaultConfiguration
            let (queue, group) = (configuration.completionQueue ?? URLConnectionOperation.defaultCallbackQueue, configuration.completionGroup)
            queue.async(group: group) { failure?(nil, error) }
            return nil
        }
    }

    /// The request for a verb method, from the request serializer.
    func makeRequest(_ method: String, _ urlString: String, parameters: Any?,
                     body: ((MultipartFormData) throws -> Void)? = nil) throws -> URLRequest {
        let url = try url(for: urlString).absoluteString
        let serializer = settings.withLock { $0.requestSerializer }
        if let body {
            return try serializer.multipartFormRequest(method: method, urlString: url,
                                                       parameters: parameters as? [String: Any], constructingBodyWith: body)
        }
        return try serializer.request(method: method, urlString: url, parameters: parameters)
    }
}

/// An operation of the library's own that a shut-down manager finishes with an error instead
/// of starting (a request, an event stream, a resumable upload).
protocol RefusableOperation: AnyObject {
    /// The request the operation was made for, to name in the error.
    var request: URLRequest { get }
    /// Finishes the operation, not yet started, with `error`.
    func refuse(_ error: any Error)
}

extension URLConnectionOperation: RefusableOperation {}
extension EventStreamOperation: RefusableOperation {}
extension ResumableUploadOperation: RefusableOperation {}
