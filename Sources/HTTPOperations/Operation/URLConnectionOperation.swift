import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Synchronization
import Tracing

/// Decides what to do with a redirect: return the request to send next (the proposed one,
/// or a rewritten one), or nil to refuse it and keep the redirect response as the response.
public typealias RedirectResponseBlock = @Sendable (
    _ operation: URLConnectionOperation, _ proposedRequest: URLRequest, _ redirectResponse: HTTPURLResponse
) -> URLRequest?

/// Answers an authentication challenge (a 401 or 407): return the credential to retry
/// with, or nil to give up and keep the challenge response as the response.
public typealias AuthenticationChallengeBlock = @Sendable (
    _ operation: URLConnectionOperation, _ challenge: AuthenticationChallenge
) -> URLCredential?

/// An `Operation` that loads one URL request with libcurl: http, https, file, and any other
/// scheme the system's libcurl speaks.
///
/// Put it on any `OperationQueue`, or call `start()` yourself. It works with
/// `addDependency(_:)`, `maxConcurrentOperationCount` and `waitUntilFinished()`. Its transfer
/// runs on the process-wide network thread; everything it calls back runs on
/// ``completionQueue``, never on that thread.
///
/// The response body goes to memory (``responseData``) unless ``outputStream`` is set, in
/// which case it is written there as it arrives and never held in memory.
///
/// ## Subclassing notes
///
/// - Override ``processResponse()`` to turn what was received into a result. It runs once,
///   on the completion queue, after the transfer ended and before the operation is marked
///   finished, so code that depends on this operation sees the result. Call `super`.
/// - Do not override `start()`, `isExecuting` or `isFinished`: the state machine behind them
///   is what `OperationQueue` relies on.
/// - ``pause(completion:)`` takes the transfer off the network: its connection closes, the bytes received
///   are kept, and ``resume()`` (or `start()`, as in AFNetworking 2) asks for the rest with
///   `Range`. A paused operation is neither executing nor finished, and its queue still
///   counts it.
/// - An operation released while it still has dependencies gives them up in its `deinit`
///   (so that a chain of any length is released without overflowing the stack), and
///   Foundation then reads `isReady` once more. An override of `isReady` must not rely on
///   the subclass's own stored properties at that point: they are already destroyed.
open class URLConnectionOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: every mutable field lives in `state`, one struct behind one Mutex
    // (HTTPRequestOperation's fields too, in `state.http`). Nothing is built or called out
    // while it is held: Foundation's key-value announcements are queued under it and made
    // after (see `changingPhase`).

    /// What the caller configures before start, and all a ``TransferDriver`` is made from: one
    /// copy of it (not of the whole ``State``) is taken when the operation starts.
    struct Settings {
        /// Set before start; from then on only the network thread writes to the stream.
        var outputStream: Handover<OutputStream?> = Handover(nil)
        /// Set by ``ResponseBodyStream``: the body goes to a task, ahead of ``outputStream``.
        var bodyChannel: ResponseBodyChannel?
        /// Every final status is the answer and its body the body (the HTTPTypes door): an
        /// error answer is not held aside but delivered like a 200, to memory or a stream.
        /// Taken from ``State/everyStatusIsAnAnswer`` at start.
        var everyStatusIsAnAnswer = false
        var completionQueue: DispatchQueue?
        var completionGroup: DispatchGroup?
        var credential: URLCredential?
        /// The origin ``credential`` is for; nil: the request's own. A manager with a base URL
        /// sets its base URL here, so its credential never goes to another origin.
        var credentialOrigin: URL?
        var maximumRedirects = 16
        /// The longest the operation may take from start to outcome; nil for no limit.
        var totalTimeout: Duration?
        var uploadProgress: TransferProgressBlock?
        var downloadProgress: TransferProgressBlock?
        var redirectBlock: RedirectResponseBlock?
        var informationalBlock: InformationalResponseBlock?
        var requestTrailers: RequestTrailersBlock?
        var challengeBlock: AuthenticationChallengeBlock?
        var serverTrustEvaluation: ServerTrustEvaluation?
        var securityPolicies = HostSecurityPolicies()
        /// nil: http and https (see ``TransferRequest/allowedSchemes``).
        var allowedSchemes: Set<String>?
        var sensitiveHeaderFields: Set<String> = []
        /// Proxy, Unix socket and host overrides.
        var route = NetworkRoute.default
        var cookieStore: CookieStore?
        /// Whom the request speaks for, as far as the cache is concerned (see
        /// ``URLConnectionOperation/cachePartition``).
        var cachePartition: String?
        /// The HTTP cache asked before sending and told of the answer; nil: none.
        var cache: HTTPCache?
        /// Downloads: where the body goes, how it continues, and what it must add up to.
        var download = DownloadConfiguration()
        var logger = URLConnectionOperation.silentLogger
        /// swift-metrics instruments; nil reports nothing.
        var metrics = RequestMetrics.bootstrapped

        /// Whether any of the blocks ``dropBlocks()`` drops is set.
        var holdsBlocks: Bool {
            uploadProgress != nil || downloadProgress != nil || redirectBlock != nil || informationalBlock != nil
                || requestTrailers != nil || challengeBlock != nil || serverTrustEvaluation != nil
        }

        /// Drops the blocks the transfer calls, once it is over: a block that captures its
        /// operation must not keep it alive.
        mutating func dropBlocks() {
            uploadProgress = nil
            downloadProgress = nil
            redirectBlock = nil
            informationalBlock = nil
            requestTrailers = nil
            challengeBlock = nil
            serverTrustEvaluation = nil
        }
    }

    /// What metrics and tracing need from start to outcome.
    struct Observation {
        /// The instruments of the settings when the operation left `ready`: the in-flight
        /// meter goes up and down on the same one, whatever is set later.
        var metrics: RequestMetrics?
        var startedAt: ContinuousClock.Instant?
        var span: (any Span)?
    }

    /// The mutable state of one operation.
    ///
    /// The operation has one lifecycle: its transfer's ``TransferStateMachine`` lives here,
    /// behind this lock, and the phase Foundation sees (``phase``) is derived from it. Pause,
    /// resume and cancel are events of the machine, taken in the caller's thread; the network
    /// thread's events (a head, a chunk, the end of a transfer) take the same lock. The jobs
    /// an answer asks of the network thread are queued in the lock that took it, so the
    /// network thread performs them in the order the machine answered.
    struct State {
        /// How far the outcome has got (see ``Delivery``).
        var delivery = Delivery.ready
        /// Set by the first effective cancel(); start() checks it under the same lock.
        var cancelRequested = false
        /// Set by the HTTPTypes door (see ``Settings/everyStatusIsAnAnswer``). Kept here so
        /// that the door's operations still share their manager's settings.
        var everyStatusIsAnAnswer = false
        /// The span's tracer and context; nil: neither (see ``SpanParent``).
        var spanParent: SpanParent?
        var currentRequest: URLRequest
        /// Shared with the manager, or with every unconfigured operation, until changed.
        var sharedSettings = SharedSettings.defaults
        /// The settings, copied on the first change (see ``SharedSettings``).
        var settings: Settings {
            _read { yield sharedSettings.value }
            _modify { yield &sharedSettings.value }
        }
        /// The state machine, the response head, trailers, timings, resume data, observation
        /// and cache exchange: made at start (see ``TransferRecord``).
        var recordStorage = TransferRecordStorage.initial
        /// The response, once built. HTTP responses arrive as `responseHead` and are built on
        /// first use, off the network thread (`HTTPURLResponse.init` is costly).
        var response: URLResponse?
        var responseData: Data?
        var error: (any Error)?
        var userInfo: [String: any Sendable] = [:]
        /// The network-side half of the operation, while it is executing or paused.
        var connection: TransferDriver?
        /// Run once the outcome is known, before the finished state (see `whenOutcomeKnown`).
        var outcomeObservers: [@Sendable (URLConnectionOperation) -> Void] = []
        /// `pause(completion:)` completions that came before the connection existed: the
        /// connection runs them once it has begun (after the resume data is saved).
        var pendingPauseCompletions: [@Sendable () -> Void] = []
        /// Key-value names whose change Foundation has yet to hear, in order (queued while
        /// another thread announces; see `changingPhase`).
        var unannounced: [String] = []
        /// A thread is announcing; others queue theirs in `unannounced`.
        var announcing = false
        /// HTTPRequestOperation's own fields, behind the same lock.
        var http = HTTPRequestOperation.HTTPState()

        /// Where the operation is: derived, never stored. Paused exactly while the machine
        /// holds a pause, and still when the outcome came during one; otherwise executing
        /// until the outcome is delivered. (So only the caller's own calls and the delivery
        /// change it: never the network thread.)
        var phase: OperationPhase {
            switch delivery {
            case .delivered: return .finished
            case .ready: return .ready
            case .running, .observersTaken: break
            }
            return machine.isPaused || machine.endedPaused ? .paused : .executing
        }
    }

    let state: Mutex<State>

    /// Every operation's logger until one is set: made once, copied (a retain) per operation.
    static let silentLogger = Logger(label: "HTTPOperations", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Records the head of the response being received. Network thread; cheap.
    func setResponseHead(_ head: ResponseHead, url: URL) {
        state.withLock { state in
            state.responseHead = (head, url)
            state.response = nil
        }
    }

    /// The final response's head as received (fields in order, repeated ones apart), when it
    /// is the response's own: nil for a response the operation made (a download a 416 found
    /// complete is reported as a 200 for the bytes held).
    var finalResponseHead: ResponseHead? {
        state.withLock { state in
            guard let (head, _) = state.responseHead else { return nil }
            if let built = state.response as? HTTPURLResponse, built.statusCode != head.statusCode { return nil }
            return head
        }
    }

    /// The head of an HTTP response whose `HTTPURLResponse` nobody has asked for yet.
    var unbuiltResponseHead: ResponseHead? {
        state.withLock { $0.response == nil ? $0.responseHead?.head : nil }
    }

    /// A process-unique id (`httpop-1f`), logged with everything about this operation under
    /// `httpop.request.id`.
    public let requestID: String

    /// The request as it was given. See ``currentRequest`` for the one sent last.
    public let request: URLRequest

    /// Creates an operation for `request`.
    ///
    /// - Parameter request: The request to load. Its URL, method, header fields, body or body
    ///   stream and timeout interval are honoured.
    public init(request: URLRequest) {
        self.request = request
        self.requestID = RequestLogging.nextRequestID()
        var initial = State(currentRequest: request)
        // Task-locals reach neither the operation queue nor the network thread: read them here.
        // Beside the settings, which stay shared (see `SpanParent`).
        initial.spanParent = .make(tracer: RequestTracing.currentTracer, context: ServiceContext.current)
        self.state = Mutex(initial)
        super.init()
    }

    /// Takes the dependencies off the operation and releases them through
    /// ``DependencyRelease``, one at a time: Foundation's `Operation` holds them strongly, and
    /// releasing them from here, each from its own `deinit`, overflowed the stack for a long
    /// chain (100,000 operations on an 8 MiB stack; issue 24).
    ///
    /// corelibs' `removeDependency` is safe here (read in its source): under the two
    /// operations' locks it removes the dependency and this operation from the dependency's
    /// list of dependents (which holds it unretained, and would otherwise dangle), then reads
    /// `isReady` and the queue, which is nil (a queue holds what it runs). `super.`: a
    /// subclass's overrides would run on its already destroyed stored properties.
    deinit {
        let dependencies = super.dependencies
        guard !dependencies.isEmpty else { return }
        for dependency in dependencies { super.removeDependency(dependency) }
        // Consumed: an array still held here would release them after the loop, recursively.
        DependencyRelease.release(consume dependencies)
    }

    // MARK: - Results

    /// The request sent last: ``request`` after any redirects and rewrites.
    public var currentRequest: URLRequest { state.withLock { $0.currentRequest } }

    /// The response, once its head has arrived.
    open var response: URLResponse? { builtResponse() }

    /// The response body, when it went to memory (``outputStream`` unset) and the operation
    /// has finished.
    public var responseData: Data? { state.withLock { $0.responseData } }

    /// The response body as text, decoded with the charset the response names, or UTF-8.
    public var responseString: String? {
        let response = builtResponse()
        let data = state.withLock { $0.responseData }
        guard let data else { return nil }
        let encoding = response?.textEncodingName.flatMap(String.Encoding.init(ianaCharsetName:)) ?? .utf8
        return String(data: data, encoding: encoding) ?? String(decoding: data, as: UTF8.self)
    }

    /// Where the operation's time went (DNS, connect, TLS, request sent, first byte, total;
    /// connection reuse, HTTP version, transfers and redirects), set once its outcome is
    /// known; nil before, or when no transfer ran. Also in the `userInfo` of
    /// `networkingOperationDidFinish` under ``Foundation/Notification/transferTimingsKey``.
    public var timings: TransferTimings? { state.withLock { $0.timings } }

    /// Why the operation failed: a `URLError` for transport failures and cancellation, or
    /// the error of whatever processed the response.
    open var error: (any Error)? { state.withLock { $0.error } }

    // MARK: - Configuration (set before the operation starts)

    /// Where the response body goes. nil (the default) keeps it in memory as ``responseData``;
    /// a stream, for example `OutputStream(toFileAtPath:append:)`, receives it as it arrives.
    /// The operation opens and closes the stream.
    public var outputStream: OutputStream? {
        get { state.withLock { $0.settings.outputStream.value } }
        set {
            let handover = Handover(newValue)
            state.withLock { $0.settings.outputStream = handover }
        }
    }

    /// The file the response body is written to, resumably; created if missing. Takes
    /// precedence over ``outputStream``. A paused or interrupted download to a file continues
    /// from the bytes on disk, and its ``resumeData`` is also saved beside it (see
    /// ``ResumeData/sidecarURL(for:)``) so another process can continue it.
    public var destinationURL: URL? {
        get { state.withLock { $0.settings.download.destination } }
        set { state.withLock { $0.settings.download.destination = newValue } }
    }

    /// Write to ``destinationURL`` even when it is a symbolic link. Default false: the file is
    /// opened with `O_NOFOLLOW`, and a link there (planted where a download was expected, to
    /// make it overwrite another file) fails the operation with ``SecurityError``
    /// `.destinationIsSymbolicLink` before anything is sent.
    public var followsSymbolicLinks: Bool {
        get { state.withLock { $0.settings.download.followsSymbolicLinks } }
        set { state.withLock { $0.settings.download.followsSymbolicLinks = newValue } }
    }

    /// Continue the bytes already in ``destinationURL`` instead of starting it afresh, with
    /// `Range` only, as `curl -C -` does. With no validator the server cannot tell whether the
    /// resource changed, so prefer ``URLConnectionOperation/init(resumeData:)`` when you have it.
    public var resumesExistingFile: Bool {
        get { state.withLock { $0.settings.download.continuing } }
        set {
            state.withLock {
                $0.settings.download.continuing = newValue
                $0.settings.download.rangeWithoutValidator = newValue
            }
        }
    }

    /// How a download resumes itself after its connection drops. Default: three retries.
    public var retryPolicy: RetryPolicy {
        get { state.withLock { $0.settings.download.retryPolicy } }
        set { state.withLock { $0.settings.download.retryPolicy = newValue } }
    }

    /// The SHA-256 the complete body must have, as hex; a mismatch fails the operation with
    /// ``IntegrityError`` and the download is not reported as complete.
    public var expectedSHA256: String? {
        get { state.withLock { $0.settings.download.expectedSHA256 } }
        set { state.withLock { $0.settings.download.expectedSHA256 = newValue?.lowercased() } }
    }

    /// The largest response body kept in memory (``outputStream`` and ``destinationURL`` unset).
    /// A body announced or grown beyond it stops the transfer and fails the operation with
    /// ``TransferError`` `.bodyTooLarge`. nil: no limit. Default 512 MiB. Bodies written to a
    /// file or stream have no limit: they never stay in memory.
    public var maximumBodySize: Int64? {
        get { state.withLock { $0.settings.download.maximumBodySize } }
        set { state.withLock { $0.settings.download.maximumBodySize = newValue.map { max(0, $0) } } }
    }

    /// The length the complete body must have; a mismatch fails the operation with
    /// ``IntegrityError``.
    public var expectedContentLength: Int64? {
        get { state.withLock { $0.settings.download.expectedLength } }
        set { state.withLock { $0.settings.download.expectedLength = newValue } }
    }

    /// How the download got its bytes: resumes, restarts, bytes fetched again.
    public var downloadMetrics: DownloadMetrics { state.withLock { $0.machine.metrics } }

    /// What a new operation needs to continue this download, once it is paused or has failed
    /// with bytes held in ``destinationURL``; nil otherwise (bodies in memory die with it).
    public var resumeData: ResumeData? { state.withLock { $0.resumeData } }

    /// The queue that callbacks run on. nil (the default) means a global concurrent queue: a
    /// server has no main queue that anybody drains.
    public var completionQueue: DispatchQueue? {
        get { state.withLock { $0.settings.completionQueue } }
        set { state.withLock { $0.settings.completionQueue = newValue } }
    }

    /// A group that every callback of this operation enters while it runs.
    public var completionGroup: DispatchGroup? {
        get { state.withLock { $0.settings.completionGroup } }
        set { state.withLock { $0.settings.completionGroup = newValue } }
    }

    /// Free-form values for the caller's own use.
    public var userInfo: [String: any Sendable] {
        get { state.withLock { $0.userInfo } }
        set { state.withLock { $0.userInfo = newValue } }
    }

    /// The credential for Basic or Digest authentication; curl negotiates which. It is sent
    /// only to the origin of ``request``, never to a host a redirect leads to.
    public var credential: URLCredential? {
        get { state.withLock { $0.settings.credential } }
        set { state.withLock { $0.settings.credential = newValue } }
    }

    /// The longest the whole operation may take, from `start()` to its outcome: every
    /// transfer, redirect, authentication round, retry wait, block decision and pause
    /// included. When it passes, the operation fails with `URLError(.timedOut)` wherever it
    /// is (a download to a file keeps its bytes and resume data). nil (the default) sets no
    /// limit; `URLRequest.timeoutInterval` stays the idle timeout either way.
    public var totalTimeout: Duration? {
        get { state.withLock { $0.settings.totalTimeout } }
        set { state.withLock { $0.settings.totalTimeout = newValue } }
    }

    /// How many redirects to follow before failing with `URLError(.httpTooManyRedirects)`;
    /// 0 follows none. Default 16.
    public var maximumRedirects: Int {
        get { state.withLock { $0.settings.maximumRedirects } }
        set { state.withLock { $0.settings.maximumRedirects = max(0, newValue) } }
    }

    /// How the TLS certificate of the request's host is trusted (pins, authorities, client
    /// certificate; see Docs/Security.md). Default: the system's authorities, with the chain
    /// and the host name verified.
    ///
    /// It applies to the host of ``request`` only: a redirect to another host is trusted
    /// under that host's policy in ``securityPolicies`` (the manager's per-host policies, else
    /// their fallback), so a lax policy set here never reaches another host.
    public var securityPolicy: SecurityPolicy {
        get { state.withLock { $0.settings.securityPolicies.policy(for: request.url?.host) } }
        set {
            let host = request.url?.host
            state.withLock { state in
                if let host { state.settings.securityPolicies.setPolicy(newValue, for: host) } else { state.settings.securityPolicies.fallback = newValue }
            }
        }
    }

    /// The policy of each host this operation may reach, its request's and any a redirect
    /// leads to. The manager sets it from its own (see
    /// ``HTTPRequestOperationManager/setSecurityPolicy(_:forHost:)``).
    public var securityPolicies: HostSecurityPolicies {
        get { state.withLock { $0.settings.securityPolicies } }
        set { state.withLock { $0.settings.securityPolicies = newValue } }
    }

    /// Header fields that hold secrets (an API key: `X-Api-Key`), dropped from the request when
    /// a redirect leaves its origin, as `Authorization`, `Cookie` and `Proxy-Authorization`
    /// always are. Compared case-insensitively. Default empty.
    public var sensitiveHeaderFields: Set<String> {
        get { state.withLock { $0.settings.sensitiveHeaderFields } }
        set { state.withLock { $0.settings.sensitiveHeaderFields = Set(newValue.map { $0.lowercased() }) } }
    }

    /// The URL schemes the operation may use, lower-case: http and https by default. A
    /// request or redirect to any other scheme fails with ``SecurityError``
    /// `.schemeNotAllowed` before anything is opened; add `"file"` to read local files
    /// through an operation. (libcurl is told the same, `CURLOPT_PROTOCOLS_STR`.)
    public var allowedSchemes: Set<String> {
        get { state.withLock { $0.settings.allowedSchemes } ?? TransferRequest.defaultSchemes }
        set {
            let schemes = TransferRequest.normalized(newValue)
            state.withLock { $0.settings.allowedSchemes = schemes }
        }
    }

    /// How the operation's connections reach the server: proxy, Unix domain socket, host
    /// overrides (see ``NetworkRoute``). A manager gives the operations it makes its own
    /// ``HTTPRequestOperationManager/route``. Default ``NetworkRoute/default``.
    public var route: NetworkRoute {
        get { state.withLock { $0.settings.route } }
        set { state.withLock { $0.settings.route = newValue } }
    }

    /// The cookies the operation sends and keeps (see ``CookieStore``); nil, the default,
    /// keeps none. Ignored for a request whose `httpShouldHandleCookies` is false. A manager
    /// gives the operations it makes its ``HTTPRequestOperationManager/cookieStore``.
    public var cookieStore: CookieStore? {
        get { state.withLock { $0.settings.cookieStore } }
        set { state.withLock { $0.settings.cookieStore = newValue } }
    }

    /// Whom this request speaks for, when the cache cannot see it in the request: an API key
    /// in a field of your own, a tenant, a user your server acts for. A response stored for
    /// one partition (or for none) is never the answer to a request in another, as for
    /// requests with different `Authorization` or `Cookie` values; such responses stay in the
    /// cache's memory, never its folder. nil, the default: the request's fields alone tell.
    public var cachePartition: String? {
        get { state.withLock { $0.settings.cachePartition } }
        set { state.withLock { $0.settings.cachePartition = newValue } }
    }

    /// The HTTP cache (RFC 9111) the operation asks before it sends its request and stores
    /// the answer in; nil, the default, caches nothing. The request's `cachePolicy` says how
    /// it is used (see ``HTTPCache``). Only bodies collected in memory are cached. A manager
    /// gives the operations it makes its ``HTTPRequestOperationManager/cache``. Set it before
    /// the operation starts.
    public var cache: HTTPCache? {
        get { state.withLock { $0.settings.cache } }
        set { state.withLock { $0.settings.cache = newValue } }
    }

    /// Where the operation logs: silent by default; a manager gives the operations it makes its
    /// own ``HTTPRequestOperationManager/logger`` when it makes them. The library logs at
    /// `debug` (start, redirect, retry, resume, outcome: status, bytes, duration, transfers,
    /// retries, resumes, error) and `trace` (timings), under `httpop.` keys with the
    /// ``requestID``; URLs lose credentials and secret-looking query values. Read when the
    /// operation starts (task-local loggers do not reach the network thread).
    public var logger: Logger {
        get { state.withLock { $0.settings.logger } }
        set { state.withLock { $0.settings.logger = newValue } }
    }

    /// Sets the block that judges each server this operation is about to send to, on each new
    /// connection, after the security policy accepted it: AFNetworking's
    /// `setWillSendRequestForAuthenticationChallengeBlock:` for server trust, on Linux.
    ///
    /// It runs on ``completionQueue``, never on the network thread: the transfer stops after
    /// the handshake, before any request byte, the block is asked, and a yes sends the request
    /// again on a new connection (a server is asked about once: its approval is kept for the
    /// operation, or for every operation of the manager that set the block). A no fails the
    /// operation with ``SecurityError`` `.serverTrustRefused`; nothing was sent. The block
    /// can refuse a server the policy accepts, never accept one it refused: to judge
    /// certificates no authority vouches for, combine it with `allowInvalidCertificates`.
    /// Released when the operation finishes.
    public func setServerTrustEvaluationBlock(_ block: ServerTrustEvaluationBlock?) {
        let evaluation = block.map(ServerTrustEvaluation.init)
        state.withLock { $0.settings.serverTrustEvaluation = evaluation }
    }

    /// Sets the block told about request-body bytes as curl takes them. Coalesced: a fast
    /// upload gets a few calls, each with the bytes since the previous one. Runs on
    /// ``completionQueue``.
    public func setUploadProgressBlock(_ block: TransferProgressBlock?) {
        state.withLock { $0.settings.uploadProgress = block }
    }

    /// Sets the block told about response-body bytes as they arrive. Coalesced like upload
    /// progress. Runs on ``completionQueue``.
    public func setDownloadProgressBlock(_ block: TransferProgressBlock?) {
        state.withLock { $0.settings.downloadProgress = block }
    }

    /// Sets the block that may rewrite or refuse each redirect. Without one, redirects are
    /// followed (up to ``maximumRedirects``) with the method rules of RFC 9110 §15.4. Runs on
    /// ``completionQueue``.
    public func setRedirectResponseBlock(_ block: RedirectResponseBlock?) {
        state.withLock { $0.settings.redirectBlock = block }
    }

    /// Sets the block asked for a credential when a response is 401 or 407 and no
    /// ``credential`` was accepted. Runs on ``completionQueue``.
    public func setAuthenticationChallengeBlock(_ block: AuthenticationChallengeBlock?) {
        state.withLock { $0.settings.challengeBlock = block }
    }

    // MARK: - Operation (the lifecycle is in URLConnectionOperation+Lifecycle.swift)

    open override var isAsynchronous: Bool { true }

    open override var isExecuting: Bool { state.withLock { $0.phase == .executing } }

    open override var isFinished: Bool { state.withLock { $0.phase == .finished } }

    /// Starts the transfer. Called by the queue; call it yourself only for an operation that
    /// is on no queue. An operation cancelled before it starts finishes at once with
    /// `URLError(.cancelled)`. On a paused operation it does what ``resume()`` does, as in
    /// AFNetworking 2; on an executing or finished one, nothing.
    open override func start() {
        startTransfer()
    }

    /// Cancels the operation in any state, once. A cancelled operation fails with
    /// `URLError(.cancelled)` and never reports success. Cancelling a finished operation, or
    /// one whose outcome is already being delivered, does nothing.
    open override func cancel() {
        cancelTransfer()
    }

    /// Called by `start()` before the transfer begins, on the thread that starts the
    /// operation. Return a request to send instead of ``request`` (``currentRequest`` becomes
    /// it), or nil to send ``request``. An error fails the operation with it, sending nothing.
    ///
    /// The base implementation returns nil. Operations whose request depends on others'
    /// results override it (``DependentRequestOperation``).
    open func prepareRequest() throws -> URLRequest? {
        nil
    }

    /// Turns what was received into a result. Runs once, on ``completionQueue``, after the
    /// transfer ended and before the operation finishes; ``response``, ``responseData`` and
    /// ``error`` are set. The base implementation does nothing.
    ///
    /// Subclasses override it to validate and decode, and call `super`.
    open func processResponse() {}
}

extension URLConnectionOperation {
    /// The response, building the `HTTPURLResponse` from the head the first time it is
    /// needed — outside the lock: Foundation canonicalises every header name.
    func builtResponse() -> URLResponse? {
        let (built, unbuilt) = state.withLock { ($0.response, $0.response == nil ? $0.responseHead : nil) }
        guard built == nil, let (head, url) = unbuilt else { return built }
        let response = head.httpURLResponse(for: url)
        return state.withLock { state in
            // Kept unless, meanwhile, another thread built it or a newer head arrived.
            if state.response == nil, let current = state.responseHead, current.head == head, current.url == url {
                state.response = response
            }
            return state.response ?? response
        }
    }
}
