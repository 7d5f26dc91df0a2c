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
        /// What the operation shares with its client's other operations (see
        /// ``OperationConfiguration``): one assignment gives it the manager's.
        var configuration = OperationConfiguration()
        /// The server-trust block and the approvals it gave, shared by every operation of the
        /// manager that set it. Not part of ``configuration``: it is set with
        /// `setServerTrustEvaluationBlock`, and assigning a configuration keeps it.
        var serverTrustEvaluation: ServerTrustEvaluation?
        var maximumRedirects = 16
        var uploadProgress: TransferProgressBlock?
        var downloadProgress: TransferProgressBlock?
        var redirectBlock: RedirectResponseBlock?
        var informationalBlock: InformationalResponseBlock?
        var requestTrailers: RequestTrailersBlock?
        var challengeBlock: AuthenticationChallengeBlock?
        /// Whom the request speaks for, as far as the cache is concerned (see
        /// ``URLConnectionOperation/cachePartition``).
        var cachePartition: String?
        /// Downloads: where the body goes, how it continues, and what it must add up to.
        var download = DownloadConfiguration()

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
        /// Set when `start()` copies the settings for the transfer (after `prepareRequest()`):
        /// from then on a change would never reach it, and is refused (see `changeSettings`).
        var settingsTaken = false
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
        var recordStorage = URLConnectionOperation.initialRecordStorage
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
        #if DEBUG
        /// A test's actions at the driver's seams (see ``DriverSeam``).
        var driverSeam: (@Sendable (DriverSeam) -> Void)?
        #endif

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
        // From the record itself: through the state's forwarding accessor, a read coroutine
        // within a read coroutine, the read allocates its frame.
        state.withLock { $0.response == nil ? $0.record.responseHead?.head : nil }
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
    /// releasing them from here, each from its own `deinit`, would overflow the stack for a
    /// long chain.
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

    /// How the download got its bytes: resumes, restarts, bytes fetched again.
    public var downloadMetrics: DownloadMetrics { state.withLock { $0.machine.metrics } }

    /// What a new operation needs to continue this download, once it is paused or has failed
    /// with bytes held in ``destinationURL``; nil otherwise (bodies in memory die with it).
    public var resumeData: ResumeData? { state.withLock { $0.resumeData } }

    /// Free-form values for the caller's own use.
    public var userInfo: [String: any Sendable] {
        get { state.withLock { $0.userInfo } }
        set { state.withLock { $0.userInfo = newValue } }
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
