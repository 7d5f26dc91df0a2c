import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// An `Operation` that uploads a file (or bytes, or a stream) with a resumable-upload protocol
/// (tus 1.0, or the IETF draft: ``ResumableUploadProtocol``), and goes on where the server
/// stopped after a dropped connection, a pause, or a process restart
/// (``init(request:resumeData:configuration:)``).
///
/// Each request (discovery, creation, offset, append, termination) is an
/// ``HTTPRequestOperation`` made by ``connectionOperation(for:)`` and started by this
/// operation, one at a time. The bytes of each append are read from the source off the
/// network thread, at most ``UploadConfiguration/chunkSize`` at a time. After any failure the
/// server's offset is asked again before another byte goes; an offset that cannot be true
/// (past the length, past every byte sent, below one acknowledged) ends the upload with an
/// ``UploadError``. The upload is complete only when the server reported the whole length.
///
/// It finishes with ``error`` nil once complete, `URLError(.cancelled)` when cancelled, or the
/// error that stopped it: an ``UploadError``, a ``ResponseValidationError`` for an answer the
/// protocol gives no meaning to, the `URLError` or ``SecurityError`` no retry cures.
///
/// ```swift
/// let upload = manager.uploadOperation(URLRequest(url: filesURL), source: .file(path))
/// upload.setResumeDataHandler { data in try? data.encoded().write(to: stateFile) }
/// manager.operationQueue.addOperation(upload)
/// ```
///
/// ## Subclassing notes
///
/// - Override ``connectionOperation(for:)`` to change each request (a fresh token); call
///   `super` or return a new ``HTTPRequestOperation`` for the request.
/// - Do not override `start()`, `cancel()`, `isExecuting` or `isFinished`.
open class ResumableUploadOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: every mutable field lives in `state`, one struct behind one Mutex;
    // the other stored properties are immutable and Sendable. Nothing is called out while the
    // lock is held. (Foundation's `Operation` is itself `@unchecked Sendable`, and Swift 6 asks
    // a subclass to restate it: the compiler checks no subclass either way.)

    /// Told how many bytes of ``totalBytes`` have gone (the server's offset after each
    /// acknowledgement, more while an append is sent; it goes back to the server's offset when
    /// bytes must be sent again). Runs on ``completionQueue``.
    public typealias ProgressHandler = @Sendable (_ operation: ResumableUploadOperation, _ bytesSent: Int64, _ totalBytes: Int64) -> Void
    /// Given the resume data each time it changes, on the upload's own task and before the
    /// request that needs it goes: save it there (quickly) to resume after a crash.
    public typealias ResumeDataHandler = @Sendable (_ resumeData: UploadResumeData) -> Void

    struct State: MachineLoopState {
        var phase = OperationPhase.ready
        var machine: UploadMachine
        var completionQueue: DispatchQueue?
        var progressHandler: ProgressHandler?
        var resumeDataHandler: ResumeDataHandler?
        /// The request under way, to cancel on a pause or cancel.
        var connection: HTTPRequestOperation?
        var makeConnection: (@Sendable (URLRequest) -> HTTPRequestOperation)?
        /// The file's identity once measured (or from resume data).
        var identity: UploadFileIdentity?
        var expires: Date?
        var lastFailure: (any Error)?
        var error: (any Error)?
        var requests = 0
        var completed = false
        /// The resume data last handed to the handler.
        var savedResumeData: UploadResumeData?
        /// The loop's task, cancelled by a cancel (a stream source's wait for bytes ends then).
        var loop: Task<Void, Never>?
        /// Run once the operation finished (the async door's waits).
        var finishObservers: [@Sendable () -> Void] = []
    }

    let state: Mutex<State>
    /// Where the loop waits between attempts and while paused.
    let wakeup = Wakeup()
    let dialect: UploadDialect

    /// The creation request (its URL and header fields go on every request).
    public let request: URLRequest
    /// Where the bytes come from.
    public let source: UploadSource
    /// How it sends and when it gives up.
    public let configuration: UploadConfiguration
    /// The resume data it started from, if any.
    let startedFrom: UploadResumeData?

    /// Creates an upload of `source` to the creation URL of `request`.
    ///
    /// - Parameters:
    ///   - request: The creation endpoint (tus: the server's upload collection; the IETF draft:
    ///     the resource that takes the upload). Its method is ignored; its header fields are sent
    ///     with every request.
    ///   - source: The bytes.
    ///   - configuration: The protocol and how it sends.
    public init(request: URLRequest, source: UploadSource, configuration: UploadConfiguration = UploadConfiguration()) {
        let size: Int64 = switch source.kind {
        case .file(let url): (try? FileStamp(url))?.size ?? 0
        case .data(let data): Int64(data.count)
        case .stream(let length, _): length
        }
        self.request = request
        self.source = source
        self.configuration = configuration
        startedFrom = nil
        dialect = UploadDialect(uploadProtocol: configuration.uploadProtocol, template: request, length: size,
                                metadata: configuration.metadata)
        state = Mutex(State(machine: UploadMachine(length: size, configuration: configuration)))
        super.init()
    }

    /// Goes on with the upload `resumeData` describes (after a restart): the file at its
    /// ``UploadResumeData/fileURL`` is measured again (a changed file fails the upload), and the
    /// server's offset is asked before any byte is sent. The configuration's protocol is the
    /// resume data's.
    public init(request: URLRequest, resumeData: UploadResumeData, configuration: UploadConfiguration = UploadConfiguration()) {
        var configuration = configuration
        configuration.uploadProtocol = resumeData.uploadProtocol
        self.request = request
        source = .file(resumeData.fileURL)
        self.configuration = configuration
        startedFrom = resumeData
        let length = resumeData.file.size
        dialect = UploadDialect(uploadProtocol: configuration.uploadProtocol, template: request, length: length,
                                metadata: configuration.metadata)
        let machine = UploadMachine(length: length, configuration: configuration, uploadURL: resumeData.uploadURL,
                                    acknowledged: resumeData.acknowledgedOffset, sentBound: resumeData.sentOffset,
                                    checksumAlgorithm: resumeData.checksumAlgorithm.flatMap(UploadChecksum.Algorithm.init))
        // The resume data holds from the start (a cancel while the file is measured again
        // keeps it); the measurement then checks it.
        state = Mutex(State(machine: machine, identity: resumeData.file, expires: resumeData.expires))
        super.init()
    }

    /// Makes each request's operation with `make` (a manager's settings). Before start.
    func makeConnections(with make: @escaping @Sendable (URLRequest) -> HTTPRequestOperation) {
        state.withLock { $0.makeConnection = make }
    }

    // MARK: - Configuration and results

    /// Sets the block told of the bytes sent. Set it before the operation starts.
    public func setProgressHandler(_ handler: ProgressHandler?) {
        state.withLock { $0.progressHandler = handler }
    }

    /// Sets the block given the resume data each time it changes (see ``ResumeDataHandler``).
    /// Only a file upload has resume data. Set it before the operation starts.
    public func setResumeDataHandler(_ handler: ResumeDataHandler?) {
        state.withLock { $0.resumeDataHandler = handler }
    }

    /// The queue the progress handler runs on; nil: a global queue.
    public var completionQueue: DispatchQueue? {
        get { state.withLock { $0.completionQueue } }
        set { state.withLock { $0.completionQueue = newValue } }
    }

    /// The upload's URL on the server, once created.
    public var uploadURL: URL? { state.withLock { $0.machine.uploadURL } }
    /// The offset the server last confirmed.
    public var acknowledgedOffset: Int64 { state.withLock { $0.machine.acknowledged } }
    /// The upload's length in bytes.
    public var totalBytes: Int64 { dialect.length }
    /// When the server said it will forget the upload (tus `Upload-Expires`), if it said.
    public var expires: Date? { state.withLock { $0.expires } }
    /// Whether a cancel with ``UploadConfiguration/terminatesOnCancel`` deleted the upload on
    /// the server (its `DELETE` answered 2xx, or 404/410: already gone).
    public var isTerminated: Bool { state.withLock { $0.machine.terminated } }
    /// Whether the server holds the whole upload (the operation finished without an error).
    public var isCompleted: Bool { state.withLock { $0.completed } }
    /// How many requests were sent so far.
    var requestCount: Int { state.withLock { $0.requests } }
    /// Why the operation failed, once finished; nil while running and once complete.
    public var error: (any Error)? { state.withLock { $0.error } }
    /// Whether the operation is paused (started, neither executing nor finished).
    public var isPaused: Bool { state.withLock { $0.phase == .paused } }

    /// What a new operation needs to go on after a restart: nil until the upload exists on the
    /// server, and for a source other than a file.
    public var resumeData: UploadResumeData? { state.withLock { resumeData(of: $0) } }

    func resumeData(of state: State) -> UploadResumeData? {
        guard let uploadURL = state.machine.uploadURL, let fileURL = source.fileURL, let identity = state.identity else { return nil }
        return UploadResumeData(uploadProtocol: configuration.uploadProtocol, uploadURL: uploadURL, fileURL: fileURL,
                                file: identity, acknowledgedOffset: state.machine.acknowledged,
                                sentOffset: state.machine.sentBound,
                                checksumAlgorithm: state.machine.checksumAlgorithm?.rawValue, expires: state.expires)
    }

    /// The operation for one request of the upload. Override to change a request or its
    /// settings; the upload then sets what it needs on the result (every status an answer, no
    /// retries of its own, no automatic resume). Called off the network thread, before each.
    open func connectionOperation(for request: URLRequest) -> HTTPRequestOperation {
        state.withLock { $0.makeConnection }?(request) ?? HTTPRequestOperation(request: request)
    }

    // MARK: - Operation

    open override var isAsynchronous: Bool { true }

    open override var isExecuting: Bool { state.withLock { $0.phase == .executing } }

    open override var isFinished: Bool { state.withLock { $0.phase == .finished } }

    /// Starts the upload. Called by the queue; on a paused operation it does what ``resume()``
    /// does.
    open override func start() {
        let start = state.withLock { $0.begin() }
        switch start {
        case .run(let first, let keys):
            announce(phaseKeys: keys)
            let loop = Task { await self.run(from: first) }
            let cancelled = state.withLock { state -> Bool in
                state.loop = loop
                return state.machine.isStopping
            }
            if cancelled { loop.cancel() }
        case .resume:
            resume()
        case .ignore:
            break
        }
    }

    /// Stops the upload: the request under way is cancelled, no byte more is sent, and the
    /// operation finishes with `URLError(.cancelled)` (after deleting the upload on the server
    /// when ``UploadConfiguration/terminatesOnCancel`` says so).
    open override func cancel() {
        let (interrupt, connection, loop) = state.withLock { ($0.machine.cancel(), $0.connection, $0.loop) }
        super.cancel()
        guard interrupt else { return }
        connection?.cancel()
        loop?.cancel()
        wakeup.wake()
    }

    /// Stops sending and holds the upload until ``resume()``. A paused operation is neither
    /// executing nor finished: its queue still counts it.
    public func pause() {
        let paused = state.withLock { $0.pauseLoop() }
        completeLoopMove(paused?.keys, closing: paused?.connection, waking: wakeup)
    }

    /// Goes on with a paused upload, from the offset the server reports.
    public func resume() {
        completeLoopMove(state.withLock { $0.resumeLoop() }, waking: wakeup)
    }

    /// Finishes an upload that has not started with `error` (its manager, shut down, refused it).
    func refuse(_ error: any Error) {
        let refused = state.withLock { state -> ([String], [@Sendable () -> Void])? in
            guard state.phase == .ready else { return nil }
            _ = state.machine.cancel()
            state.error = error
            state.makeConnection = nil
            defer { state.finishObservers = [] }
            return (state.phase.move(to: .finished), state.finishObservers)
        }
        guard let (keys, observers) = refused else { return }
        announce(phaseKeys: keys)
        observers.forEach { $0() }
    }

    /// Runs `observer` once the operation finished (at once when it has).
    func whenFinished(_ observer: @escaping @Sendable () -> Void) {
        let finished = state.withLock { state -> Bool in
            guard state.phase != .finished else { return true }
            state.finishObservers.append(observer)
            return false
        }
        if finished { observer() }
    }

    /// The error of a cancelled upload.
    var cancellationError: URLError {
        URLError(.cancelled, url: request.url, description: "The upload was cancelled.")
    }
}
