import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Synchronization

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
/// - ``pause()`` holds the transfer: the connection stays open and nothing is re-sent. A
///   paused operation is neither executing nor finished, and its queue still counts it.
open class URLConnectionOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: every mutable field lives in `state`, behind its Mutex. The
    // transition lock only orders state changes with their announcements to Foundation; it
    // guards no data of its own.

    /// The mutable state of one operation.
    struct State {
        var phase: OperationPhase = .ready
        /// Set once the outcome (success, failure, cancellation) is fixed; cancel() is then a no-op.
        var outcomeDecided = false
        /// Set by the first effective cancel(); start() checks it under the same lock.
        var cancelRequested = false
        var currentRequest: URLRequest
        /// The response, once built. HTTP responses arrive as `responseHead` and are built on
        /// first use, off the network thread (`HTTPURLResponse.init` is costly).
        var response: URLResponse?
        var responseHead: (head: ResponseHead, url: URL)?
        var responseData: Data?
        var error: (any Error)?
        /// Set before start; from then on only the network thread writes to the stream.
        var outputStream: Handover<OutputStream?> = Handover(nil)
        var completionQueue: DispatchQueue?
        var completionGroup: DispatchGroup?
        var userInfo: [String: any Sendable] = [:]
        var credential: URLCredential?
        var maximumRedirects = 16
        var uploadProgress: TransferProgressBlock?
        var downloadProgress: TransferProgressBlock?
        var redirectBlock: RedirectResponseBlock?
        var challengeBlock: AuthenticationChallengeBlock?
        var securityPolicy = SecurityPolicy.default
        /// Downloads: where the body goes, how it continues, and what it must add up to.
        var download = DownloadConfiguration()
        var downloadMetrics = DownloadMetrics()
        var resumeData: ResumeData?
        var logger = URLConnectionOperation.silentLogger
        /// The network-side half of the operation, while it is executing or paused.
        var connection: Connection?
        /// Run once the outcome is known, before the finished state (see `whenOutcomeKnown`).
        var outcomeObservers: [@Sendable (URLConnectionOperation) -> Void] = []
        /// Set when the observers are taken to run; later ones run at once.
        var outcomeObserversTaken = false
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

    /// The head of an HTTP response whose `HTTPURLResponse` nobody has asked for yet.
    var unbuiltResponseHead: ResponseHead? {
        state.withLock { $0.response == nil ? $0.responseHead?.head : nil }
    }

    private let transitionLock = Mutex(())

    /// The request as it was given. See ``currentRequest`` for the one sent last.
    public let request: URLRequest

    /// Creates an operation for `request`.
    ///
    /// - Parameter request: The request to load. Its URL, method, header fields, body or body
    ///   stream and timeout interval are honoured.
    public init(request: URLRequest) {
        self.request = request
        self.state = Mutex(State(currentRequest: request))
        super.init()
    }

    // MARK: - Results

    /// The request sent last: ``request`` after any redirects and rewrites.
    public var currentRequest: URLRequest { state.withLock { $0.currentRequest } }

    /// The response, once its head has arrived.
    open var response: URLResponse? { state.withLock { $0.builtResponse() } }

    /// The response body, when it went to memory (``outputStream`` unset) and the operation
    /// has finished.
    public var responseData: Data? { state.withLock { $0.responseData } }

    /// The response body as text, decoded with the charset the response names, or UTF-8.
    public var responseString: String? {
        let (data, response) = state.withLock { ($0.responseData, $0.builtResponse()) }
        guard let data else { return nil }
        let encoding = response?.textEncodingName.flatMap(String.Encoding.init(ianaCharsetName:)) ?? .utf8
        return String(data: data, encoding: encoding) ?? String(decoding: data, as: UTF8.self)
    }

    /// Why the operation failed: a `URLError` for transport failures and cancellation, or
    /// the error of whatever processed the response.
    open var error: (any Error)? { state.withLock { $0.error } }

    // MARK: - Configuration (set before the operation starts)

    /// Where the response body goes. nil (the default) keeps it in memory as ``responseData``;
    /// a stream, for example `OutputStream(toFileAtPath:append:)`, receives it as it arrives.
    /// The operation opens and closes the stream.
    public var outputStream: OutputStream? {
        get { state.withLock { $0.outputStream.value } }
        set {
            let handover = Handover(newValue)
            state.withLock { $0.outputStream = handover }
        }
    }

    /// The file the response body is written to, resumably; created if missing. Takes
    /// precedence over ``outputStream``. A paused or interrupted download to a file continues
    /// from the bytes on disk, and its ``resumeData`` is also saved beside it (see
    /// ``ResumeData/sidecarURL(for:)``) so another process can continue it.
    public var destinationURL: URL? {
        get { state.withLock { $0.download.destination } }
        set { state.withLock { $0.download.destination = newValue } }
    }

    /// Continue the bytes already in ``destinationURL`` instead of starting it afresh, with
    /// `Range` only, as `curl -C -` does. With no validator the server cannot tell whether the
    /// resource changed, so prefer ``HTTPRequestOperation/init(resumeData:)`` when you have it.
    public var resumesExistingFile: Bool {
        get { state.withLock { $0.download.continuing } }
        set { state.withLock { $0.download.continuing = newValue } }
    }

    /// How a download resumes itself after its connection drops. Default: three retries.
    public var retryPolicy: RetryPolicy {
        get { state.withLock { $0.download.retryPolicy } }
        set { state.withLock { $0.download.retryPolicy = newValue } }
    }

    /// The SHA-256 the complete body must have, as hex; a mismatch fails the operation with
    /// ``IntegrityError`` and the download is not reported as complete.
    public var expectedSHA256: String? {
        get { state.withLock { $0.download.expectedSHA256 } }
        set { state.withLock { $0.download.expectedSHA256 = newValue?.lowercased() } }
    }

    /// The length the complete body must have; a mismatch fails the operation with
    /// ``IntegrityError``.
    public var expectedContentLength: Int64? {
        get { state.withLock { $0.download.expectedLength } }
        set { state.withLock { $0.download.expectedLength = newValue } }
    }

    /// How the download got its bytes: resumes, restarts, bytes fetched again.
    public var downloadMetrics: DownloadMetrics { state.withLock { $0.downloadMetrics } }

    /// What a new operation needs to continue this download, once it is paused or has failed
    /// with bytes held in ``destinationURL``; nil otherwise (bodies in memory die with it).
    public var resumeData: ResumeData? { state.withLock { $0.resumeData } }

    /// The queue that callbacks run on. nil (the default) means a global concurrent queue: a
    /// server has no main queue that anybody drains.
    public var completionQueue: DispatchQueue? {
        get { state.withLock { $0.completionQueue } }
        set { state.withLock { $0.completionQueue = newValue } }
    }

    /// A group that every callback of this operation enters while it runs.
    public var completionGroup: DispatchGroup? {
        get { state.withLock { $0.completionGroup } }
        set { state.withLock { $0.completionGroup = newValue } }
    }

    /// Free-form values for the caller's own use.
    public var userInfo: [String: any Sendable] {
        get { state.withLock { $0.userInfo } }
        set { state.withLock { $0.userInfo = newValue } }
    }

    /// The credential for Basic or Digest authentication; curl negotiates which. It is sent
    /// only to the origin of ``request``, never to a host a redirect leads to.
    public var credential: URLCredential? {
        get { state.withLock { $0.credential } }
        set { state.withLock { $0.credential = newValue } }
    }

    /// How many redirects to follow before failing with `URLError(.httpTooManyRedirects)`;
    /// 0 follows none. Default 16.
    public var maximumRedirects: Int {
        get { state.withLock { $0.maximumRedirects } }
        set { state.withLock { $0.maximumRedirects = max(0, newValue) } }
    }

    /// How the server's TLS certificate is trusted. Default: the system's authorities, with
    /// the chain and the host name verified.
    public var securityPolicy: SecurityPolicy {
        get { state.withLock { $0.securityPolicy } }
        set { state.withLock { $0.securityPolicy = newValue } }
    }

    /// Where the operation logs: silent by default. It is captured when the operation starts
    /// (task-local loggers do not reach the network thread).
    public var logger: Logger {
        get { state.withLock { $0.logger } }
        set { state.withLock { $0.logger = newValue } }
    }

    /// Sets the block told about request-body bytes as curl takes them. Coalesced: a fast
    /// upload gets a few calls, each with the bytes since the previous one. Runs on
    /// ``completionQueue``.
    public func setUploadProgressBlock(_ block: TransferProgressBlock?) {
        state.withLock { $0.uploadProgress = block }
    }

    /// Sets the block told about response-body bytes as they arrive. Coalesced like upload
    /// progress. Runs on ``completionQueue``.
    public func setDownloadProgressBlock(_ block: TransferProgressBlock?) {
        state.withLock { $0.downloadProgress = block }
    }

    /// Sets the block that may rewrite or refuse each redirect. Without one, redirects are
    /// followed (up to ``maximumRedirects``) with the method rules of RFC 9110 §15.4. Runs on
    /// ``completionQueue``.
    public func setRedirectResponseBlock(_ block: RedirectResponseBlock?) {
        state.withLock { $0.redirectBlock = block }
    }

    /// Sets the block asked for a credential when a response is 401 or 407 and no
    /// ``credential`` was accepted. Runs on ``completionQueue``.
    public func setAuthenticationChallengeBlock(_ block: AuthenticationChallengeBlock?) {
        state.withLock { $0.challengeBlock = block }
    }

    // MARK: - Operation

    open override var isAsynchronous: Bool { true }

    open override var isExecuting: Bool { state.withLock { $0.phase == .executing } }

    open override var isFinished: Bool { state.withLock { $0.phase == .finished } }

    /// Whether the operation is paused: started, holding its transfer, not finished.
    public var isPaused: Bool { state.withLock { $0.phase == .paused } }

    /// Starts the transfer. Called by the queue; call it yourself only for an operation that
    /// is on no queue. An operation cancelled before it starts finishes at once with
    /// `URLError(.cancelled)`.
    open override func start() {
        guard transition(to: .executing) else { return }
        do {
            if let prepared = try prepareRequest() {
                state.withLock { $0.currentRequest = prepared }
            }
        } catch {
            NotificationCenter.default.post(name: .networkingOperationDidStart, object: self)
            conclude(response: nil, data: nil, error: error)
            return
        }
        // After prepareRequest(), so observers see the request that is sent.
        NotificationCenter.default.post(name: .networkingOperationDidStart, object: self)
        let connection = state.withLock { state -> Connection? in
            guard !state.cancelRequested else { return nil }
            // A pause that came between the transition and now must not be lost.
            let connection = Connection(operation: self, configuration: state, paused: state.phase == .paused)
            state.connection = connection
            return connection
        }
        guard let connection else {
            conclude(response: nil, data: nil, error: cancellationError())
            return
        }
        state.withLock { $0.logger }.debug("operation started", metadata: ["url": "\(request.url?.absoluteString ?? "")"])
        NetworkThread.shared.perform { connection.begin() }
    }

    /// Cancels the operation in any state, once. A cancelled operation fails with
    /// `URLError(.cancelled)` and never reports success. Cancelling a finished operation, or
    /// one whose outcome is already being delivered, does nothing.
    open override func cancel() {
        // Decided under the lock that start() uses, so a cancel racing with start() is seen
        // by exactly one of them.
        let decision = state.withLock { state -> (effective: Bool, connection: Connection?) in
            guard !state.outcomeDecided, !state.cancelRequested else { return (false, nil) }
            state.cancelRequested = true
            return (true, state.connection)
        }
        guard decision.effective else { return }
        super.cancel()
        // Not started: start() will finish it. Started: stop the transfer where it is.
        if let connection = decision.connection {
            NetworkThread.shared.perform { connection.cancel() }
        }
    }

    /// Pauses the transfer: it is taken off the network (its connection closes), the bytes
    /// received so far are kept, and the operation is neither executing nor finished until
    /// ``resume()``. For a download to ``destinationURL`` the ``resumeData`` is also saved
    /// beside the file. Does nothing unless the operation is executing.
    ///
    /// - Parameter completion: Runs on the completion queue once the pause has taken effect and
    ///   the resume data is saved, for example before a process exits.
    public func pause(completion: (@Sendable () -> Void)? = nil) {
        guard transition(from: .executing, to: .paused) else { return }
        if let connection = state.withLock({ $0.connection }) {
            NetworkThread.shared.perform { connection.setPaused(true, whenPaused: completion) }
        }
    }

    /// Resumes a paused transfer: the request is sent again with `Range` for the bytes after
    /// those held and `If-Range` naming their version, and the answer decides (see
    /// Docs/ResumableDownloads.md). Does nothing unless the operation is paused.
    public func resume() {
        guard transition(from: .paused, to: .executing) else { return }
        if let connection = state.withLock({ $0.connection }) {
            NetworkThread.shared.perform { connection.setPaused(false) }
        }
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

    /// Runs `observer` once the operation's outcome is known: after ``processResponse()`` (and
    /// so after the success or failure block), before the operation is marked finished, on
    /// the completion queue. Operations that depend on this one start after it. Added after
    /// the outcome is known, it runs at once.
    func whenOutcomeKnown(_ observer: @escaping @Sendable (URLConnectionOperation) -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.outcomeObserversTaken else { return true }
            state.outcomeObservers.append(observer)
            return false
        }
        if runNow { observer(self) }
    }

    // MARK: - Completion

    /// Turns what was received into a result. Runs once, on ``completionQueue``, after the
    /// transfer ended and before the operation finishes; ``response``, ``responseData`` and
    /// ``error`` are set. The base implementation does nothing.
    ///
    /// Subclasses override it to validate and decode, and call `super`.
    open func processResponse() {}

    /// Records the outcome of the transfer and finishes the operation on its callback queue:
    /// the last progress, processResponse(), then the finished state, then the notification.
    ///
    /// - Parameters:
    ///   - callbackQueue: The queue the operation's other callbacks went through (serial when
    ///     there were progress callbacks), so the outcome comes after all of them; nil means
    ///     the completion queue.
    ///   - completion: A last check of a successful transfer (integrity), run on the callback
    ///     queue before processResponse(); an error it returns fails the operation.
    ///   - handoff: On the network thread, the hand-off that batches the outcomes of one pass
    ///     into one wake-up; nil dispatches now.
    func conclude(response: URLResponse?, data: Data?, error: (any Error)?,
                  on callbackQueue: DispatchQueue? = nil, progress: [ProgressReporter] = [],
                  completion: (@Sendable (Data?) -> (any Error)?)? = nil,
                  handoff: CallbackHandoff? = nil) {
        let (completionQueue, group, logger) = state.withLock { state in
            state.outcomeDecided = true
            state.connection = nil
            if let response {
                state.response = response
                state.responseHead = nil
            }
            state.responseData = data
            // A cancel that won the lock before this point turns any outcome into a
            // cancellation: a cancelled operation never reports success.
            state.error = state.cancelRequested ? cancellationError() : error
            return (state.completionQueue, state.completionGroup, state.logger)
        }
        let queue = callbackQueue ?? completionQueue ?? .global()
        let deliver: @Sendable () -> Void = {
            for reporter in progress { reporter.deliverPending() }
            if let failure = completion?(data) {
                self.state.withLock { $0.error = failure }
            }
            self.processResponse()
            let observers = self.state.withLock { state in
                state.outcomeObserversTaken = true
                defer { state.outcomeObservers.removeAll() }
                return state.outcomeObservers
            }
            for observer in observers { observer(self) }
            self.transition(to: .finished)
            logger.debug("operation finished", metadata: ["error": "\(self.error.map { "\($0)" } ?? "none")"])
            NotificationCenter.default.post(name: .networkingOperationDidFinish, object: self)
        }
        if let handoff {
            // Consumed: the network thread must not hold the last reference to this operation.
            handoff.deliver(on: queue, group: group, consume deliver)
        } else {
            queue.async(group: group, execute: deliver)
        }
    }

    /// A serial queue for one operation's callbacks, running them on `completionQueue` (a
    /// global concurrent queue when nil): in order, never two at once.
    static func makeCallbackQueue(targeting completionQueue: DispatchQueue?) -> DispatchQueue {
        DispatchQueue(label: "HTTPOperations.callbacks", target: completionQueue ?? .global())
    }

    func cancellationError() -> URLError {
        URLError(.cancelled, url: request.url, description: "The operation was cancelled.")
    }

    /// Moves to `next` if the state machine allows it, and tells Foundation.
    @discardableResult
    func transition(from expected: OperationPhase? = nil, to next: OperationPhase) -> Bool {
        transitionLock.withLock { _ in
            let previous = state.withLock { state -> OperationPhase? in
                guard expected == nil || state.phase == expected, state.phase.canTransition(to: next) else {
                    return nil
                }
                defer { state.phase = next }
                return state.phase
            }
            guard let previous else { return false }
            // Announced outside the state lock (Foundation reads isFinished and isExecuting
            // while it reacts) but inside the transition lock, so announcements keep the order
            // of the transitions.
            for key in previous.changedKeys(to: next) {
                willChangeValue(forKey: key)
                didChangeValue(forKey: key)
            }
            return true
        }
    }
}

extension URLConnectionOperation.State {
    /// The response, building the `HTTPURLResponse` from the head the first time it is needed.
    mutating func builtResponse() -> URLResponse? {
        if response == nil, let (head, url) = responseHead {
            response = head.httpURLResponse(for: url)
        }
        return response
    }
}
