import Foundation
import Logging

/// The network-thread half of a ``URLConnectionOperation``: it feeds the operation's
/// ``TransferStateMachine`` the transfer's events and performs what the machine decides — starting curl transfers
/// (one per redirect, authentication round, resume or retry), writing the body where it
/// belongs, asking the redirect and challenge blocks — and hands the outcome back to the
/// operation exactly once. It decides nothing itself.
///
/// Pause, resume, retry timers and resume data live in `TransferDriver+Resume.swift`; what
/// curl reports of a transfer (head, body, progress, its end) in `TransferDriver+CurlEvents.swift`.
///
/// The machine is not here: it lives in the operation's state, behind the operation's lock,
/// because the operation's phase is derived from it and the caller's pause, resume and
/// cancel are its events too (see ``URLConnectionOperation/State``). This reaches it through
/// ``withMachine(_:)``.
///
/// Thread-safety: created on the thread that starts the operation, which also opens the body's
/// file (no file system call on the network thread); every method after `init` runs on the
/// network thread (through `NetworkThread.perform` or curl's callbacks), so its own fields
/// need no lock; each such entry checks it in debug builds (``assertOnNetworkThread(_:)``).
final class TransferDriver: CurlTransferDelegate, @unchecked Sendable {
    let operation: URLConnectionOperation
    let logger: Logger
    /// Where callbacks run: the completion queue, or, when there are progress or
    /// informational callbacks to keep in order ahead of the outcome, a serial queue
    /// targeting it.
    let callbackQueue: DispatchQueue
    let completionGroup: DispatchGroup?
    let redirectBlock: RedirectResponseBlock?
    let challengeBlock: AuthenticationChallengeBlock?
    let informationalBlock: InformationalResponseBlock?
    let requestTrailers: RequestTrailersBlock?
    private let totalTimeout: Duration?
    let uploadProgress: ProgressReporter?
    let downloadProgress: ProgressReporter?
    /// Credentials, security policies, schemes, route and cookies: what every transfer is
    /// built from besides its request.
    var inputs: TransferInputs
    /// Header fields dropped, besides the credential ones, when a redirect leaves the origin.
    let sensitiveHeaderFields: Set<String>
    let download: DownloadConfiguration
    /// The task reading the body, told when the head of the answer it reads arrived.
    let bodyChannel: ResponseBodyChannel?
    /// Every status is an answer (the HTTPTypes door).
    private let everyStatusIsAnAnswer: Bool
    /// A head was delivered to the sink (the body began).
    var headDelivered = false

    /// The request sent last (or about to be sent).
    var request: URLRequest
    /// The first request, before any redirect: what resume data names, so that a saved
    /// download is continued from the URL the caller asked for.
    let originalRequest: URLRequest
    var transfer: CurlTransfer?
    /// The machine's attempt ``transfer`` serves (``TransferStateMachine/Attempt/number``).
    /// A caller's pause and resume move the machine to its next attempt at once, and the old
    /// transfer is stopped only when their jobs get here: until then its late events are
    /// refused, never taken as the new attempt's.
    var transferAttempt = 0
    /// The last final head of the current transfer.
    var head: ResponseHead?
    /// The trailer fields after the current transfer's body, if it had any.
    var trailers: ResponseHead?
    /// The body of the response the machine holds aside (see ``TransferStateMachine/BodyRoute``).
    var bodyAside = Data()
    /// Where the body goes; nil when it could not be opened (`sinkFailure`).
    private(set) var sink: ResponseBodySink?
    private var sinkFailure: (any Error)?
    /// The outcome was handed to the operation.
    private var reported = false
    /// Where the time went, transfer after transfer.
    var timings: TransferTimings?
    /// Serial queue that writes the body to its file or stream, and writes and removes the
    /// sidecar resume data after the bytes it describes. Made on first use: bodies in memory
    /// never need it. A file's is on one of the shared ``WriterLanes`` (a fixed number of
    /// threads for every download); a caller's stream gets a queue of its own, so a stream
    /// that blocks holds up only its own download.
    lazy var writerQueue = download.destination != nil
        ? WriterLanes.shared.makeWriterQueue()
        : DispatchQueue(label: "HTTPOperations.writer")
    /// Serial queue that reads a request body stream (see ``BodyReader``), for every transfer
    /// of this operation in turn. Made on first use.
    private lazy var readerQueue = DispatchQueue(label: "HTTPOperations.reader")
    /// The body stream an earlier transfer sent, which a later one must rewind.
    private var sentBodyStream: ObjectIdentifier?
    /// The first request's transfer, worked out in `init` on the thread that starts the
    /// operation, so the network thread does no Foundation parsing for it (redirects and
    /// authentication rounds are built there, rarely).
    private var firstTransfer: Result<TransferRequest, any Error>?

    /// Snapshots the operation's configuration, works out the first transfer and opens the
    /// body's destination, on the calling thread.
    init(operation: URLConnectionOperation, settings: consuming URLConnectionOperation.Settings, request: URLRequest) {
        self.operation = operation
        self.logger = RequestLogging.logger(settings.configuration.logger, requestID: operation.requestID, request: request)
        self.completionGroup = settings.configuration.completionGroup
        self.redirectBlock = settings.redirectBlock
        self.challengeBlock = settings.challengeBlock
        self.informationalBlock = settings.informationalBlock
        self.requestTrailers = settings.requestTrailers
        self.totalTimeout = settings.configuration.totalTimeout
        let inputs = TransferInputs(settings, request: request)
        self.inputs = inputs
        self.sensitiveHeaderFields = settings.configuration.sensitiveHeaderFields
        self.download = settings.download
        self.bodyChannel = settings.bodyChannel
        self.everyStatusIsAnAnswer = settings.everyStatusIsAnAnswer
        self.request = request
        self.originalRequest = request
        // The completion queue may be concurrent (the global one, by default): callbacks that
        // must run before the outcome's, in order, need a serial queue of their own.
        let callbacksBeforeTheOutcome = settings.uploadProgress != nil || settings.downloadProgress != nil
            || settings.informationalBlock != nil
        let queue = callbacksBeforeTheOutcome
            ? URLConnectionOperation.makeCallbackQueue(targeting: settings.configuration.completionQueue)
            : settings.configuration.completionQueue ?? URLConnectionOperation.defaultCallbackQueue
        self.callbackQueue = queue
        self.uploadProgress = settings.uploadProgress.map { ProgressReporter(block: $0, callbackQueue: queue) }
        self.downloadProgress = settings.downloadProgress.map { ProgressReporter(block: $0, callbackQueue: queue) }
        let outputStream: BodyWriter.Target? = settings.bodyChannel.map { .consumer($0) }
            ?? settings.outputStream.value.map { .stream($0) }
        // The first transfer holds the method upper-cased already, and the header fields as
        // a list (cheaper to scan than the request's dictionary): read before it is moved in.
        let first: Result<TransferRequest, any Error>
        let method: String
        var sendsOwnRange = false
        do {
            let transfer = try inputs.transferRequest(for: request)
            method = transfer.method
            sendsOwnRange = transfer.headers.contains { fieldNamesMatch($0.name, "Range") }
            first = .success(transfer)
        } catch {
            method = (request.httpMethod ?? "GET").uppercased()
            first = .failure(error)
        }
        let inMemory = settings.download.destination == nil && outputStream == nil
        let machineConfiguration = TransferStateMachine.Configuration(
            maximumRedirects: settings.maximumRedirects,
            answersChallenges: settings.challengeBlock != nil,
            retryPolicy: settings.download.retryPolicy,
            isIdempotent: TransferRequest.idempotentMethods.contains(method),
            maximumBodySize: inMemory ? settings.download.maximumBodySize : nil,
            canRestart: settings.download.destination != nil || outputStream == nil,
            sendsOwnRange: sendsOwnRange,
            expectsBody: method != "HEAD",
            // Where every status is an answer (the HTTPTypes door), an error answer is the body
            // of memory or a stream; a file holds only bytes of the resource, always.
            errorAnswerJoinsBody: inMemory || (settings.everyStatusIsAnAnswer && settings.download.destination == nil),
            everyStatusIsTheBody: settings.everyStatusIsAnAnswer && settings.download.destination == nil,
            expectsHeads: ["http", "https"].contains(request.url?.scheme?.lowercased() ?? ""))
        let download = settings.download
        operation.withMachine { machine in
            machine.configure(machineConfiguration, validator: download.validator, entityTag: download.entityTag,
                              lastModified: download.lastModified, knownLength: download.knownLength,
                              rangeWithoutValidator: download.rangeWithoutValidator)
        }
        self.firstTransfer = consume first
        openSink(stream: outputStream)
        // Counted until reported: the network thread does not stop under a live connection.
        NetworkThread.shared.connectionStarted()
    }

    /// Opens the file or stream the body goes to (or prepares memory).
    private func openSink(stream: BodyWriter.Target?) {
        guard download.destination != nil || stream != nil else {
            // Memory has no writer, so no writer callbacks to make (two weak references).
            sink = ResponseBodySink()
            return
        }
        do {
            let continuing = download.continuing || download.validator != nil
            sink = try ResponseBodySink(destination: download.destination, stream: stream, continuing: continuing,
                                        followsSymbolicLinks: download.followsSymbolicLinks,
                                        writerQueue: { writerQueue }, roomAvailable: { [weak self] in
                                            // Weak: the sink's writer is ours; a strong capture would be a cycle.
                                            guard let connection = self else { return }
                                            NetworkThread.shared.perform { connection.writerHasRoom() }
                                        }, failed: { [weak self] error in
                                            guard let connection = self else { return }
                                            NetworkThread.shared.perform { connection.writerFailed(error) }
                                        })
        } catch {
            sinkFailure = error
        }
    }

    /// Checks, in debug builds, what `@unchecked Sendable` promises here: the driver's own fields
    /// are touched on the network thread only. Called on every entry from another thread's job
    /// (`NetworkThread.perform`) and from curl's callbacks.
    @inline(__always)
    func assertOnNetworkThread(_ entry: StaticString = #function) {
        assert(NetworkThread.shared.isCurrentThread, "TransferDriver.\(entry) ran off the network thread")
    }

    /// The operation's machine, in the operation's lock (see
    /// ``URLConnectionOperation/withMachine(_:)``).
    @discardableResult
    func withMachine<Result: Sendable>(_ event: (inout TransferStateMachine) -> Result) -> Result {
        operation.withMachine(event)
    }

    // MARK: - Commands (network thread)

    /// Begins the transfer with the bytes the sink holds, unless the machine was paused or
    /// cancelled while this connection was being made.
    ///
    /// - Parameter whenPaused: Completions of pauses asked for before this connection existed.
    func begin(whenPaused: [@Sendable () -> Void]) {
        assertOnNetworkThread()
        defer { callBack(whenPaused) }
        // Cancelled before the connection was stored: no job of the cancel's own came.
        if withMachine({ $0.isFinished }) { return cancel() }
        if let totalTimeout { armDeadline(after: totalTimeout) }
        guard let sink else {
            return fail(sinkFailure ?? URLError(.cannotOpenFile, url: download.destination, description: "No body sink."))
        }
        let held = sink.heldAtOpen
        let (send, attempt, knownLength) = withMachine { machine in
            (machine.begin(held: held), machine.attempt.number, machine.held.knownLength)
        }
        if held > 0 {
            downloadProgress?.reset(total: held, expected: knownLength ?? -1)
        }
        guard let send else {
            // Paused before anything was sent; resume sends it. What the file holds is saved.
            return publishResumeData(saving: true)
        }
        start(send, attempt: attempt, prepared: takeFirstTransfer())
    }

    /// The first request's transfer, worked out in `init`, for the first send (now, or on
    /// resume when the operation was paused before it).
    func takeFirstTransfer() -> Result<TransferRequest, any Error>? {
        firstTransfer.take()
    }

    /// The operation was cancelled: its machine ended then, in the caller's thread, so
    /// nothing it answered since is reported instead; what is left is to stop and report.
    func cancel() {
        assertOnNetworkThread()
        stopTransfer()
        finish(response: nil, error: operation.cancellationError())
    }

    /// Ends the transfer with `error` (a failure found here rather than by the machine),
    /// unless the outcome was already given.
    ///
    /// - Parameter attempt: The attempt whose transfer found the failure, when one did: only
    ///   while the machine is still at it (checked in the lock that ends it).
    func fail(_ error: any Error, response: URLResponse? = nil, attempt: Int? = nil) {
        assertOnNetworkThread()
        guard withMachine({ machine in (attempt.map { machine.attempt.number == $0 } ?? true) && machine.end() }) else { return }
        stopTransfer()
        finish(response: response, error: error)
    }

    // MARK: - Transfers

    /// Starts the transfer the machine asked for, for ``request``.
    ///
    /// - Parameters:
    ///   - attempt: The machine's attempt number when it answered `send`.
    ///   - prepared: Its transfer, when worked out before (the first request's).
    func start(_ send: TransferStateMachine.Send, attempt: Int, prepared: consuming Result<TransferRequest, any Error>? = nil) {
        assertOnNetworkThread()
        // Still the machine's request? A resume's job may come after an outcome (a timeout
        // or a write failure queued between the pause and the resume), or after a pause and
        // resume that made a newer attempt: nothing is sent for it then.
        guard !reported, withMachine({ $0.phase == .transferring && $0.attempt.number == attempt }) else { return }
        head = nil
        trailers = nil
        bodyAside = Data()
        if send.reason != .first {
            let next = request
            operation.transferSends(next)
        }
        var rewindsBody = false
        if let stream = request.httpBodyStream {
            // Known by identity: asking the stream its status would run user code here.
            rewindsBody = sentBodyStream == ObjectIdentifier(stream)
            if rewindsBody, !stream.canBeSentAgain {
                // A plain stream cannot be read twice; a 307/308 that keeps the body needs a new one.
                return fail(URLError(.requestBodyStreamExhausted, url: request.url,
                                     description: "The request body stream was already sent once."))
            }
            sentBodyStream = ObjectIdentifier(stream)
        }
        do {
            var transferRequest: TransferRequest
            switch consume prepared {
            case .some(.success(let ready)): transferRequest = ready
            case .some(.failure(let error)): throw error
            case nil: transferRequest = try inputs.transferRequest(for: request)
            }
            if case .stream = transferRequest.body {
                transferRequest.bodyQueue = readerQueue
                transferRequest.rewindsBody = rewindsBody
                transferRequest.requestTrailers = requestTrailers
            }
            addRangeHeaders(for: send, to: &transferRequest)
            let sendsCredential = transferRequest.credential != nil || transferRequest.proxyCredential != nil
            // Only for the attempt checked above: a pause and resume since then made another.
            withMachine { if $0.attempt.number == attempt { $0.credentialSent(sendsCredential) } }
            let transfer = CurlTransfer(request: transferRequest, delegate: self)
            self.transfer = transfer
            transferAttempt = attempt
            NetworkThread.shared.multi.add(transfer)
        } catch {
            fail(error)
        }
    }

    /// Adds `Range` and `If-Range` when the machine asks for the bytes after those held. A
    /// caller's own `Range` (a byte-range request) is sent as it is.
    private func addRangeHeaders(for send: TransferStateMachine.Send, to transfer: inout TransferRequest) {
        guard !withMachine({ $0.configuration.sendsOwnRange }) else { return }
        transfer.headers.removeAll { fieldNamesMatch($0.name, "Range") || fieldNamesMatch($0.name, "If-Range") }
        guard let from = send.rangeFrom else { return }
        transfer.headers.append(("Range", "bytes=\(from)-"))
        if let validator = send.validator {
            transfer.headers.append(("If-Range", validator.headerValue))
        }
        // Ranges count the bytes as stored; a compressed answer would count other bytes.
        transfer.headers.removeAll { fieldNamesMatch($0.name, "Accept-Encoding") }
        transfer.headers.append(("Accept-Encoding", "identity"))
    }

    func stopTransfer() {
        assertOnNetworkThread()
        if let transfer {
            NetworkThread.shared.multi.remove(transfer)
            self.transfer = nil
        }
    }

    // MARK: - The end

    /// Hands `outcome` to the operation: the response, and the body where it belongs.
    ///
    /// - Parameter transfer: The transfer that ended, for schemes without heads (file:).
    func report(_ outcome: TransferStateMachine.Outcome, of transfer: CurlTransfer?) {
        switch outcome {
        case .success:
            guard head == nil, let url = request.url else { return finish(response: nil, error: nil) }
            // Not HTTP (file: and friends): no head, just bytes.
            let length = Int(transfer?.expectedContentLength ?? -1)
            finish(response: URLResponse(url: url, mimeType: nil, expectedContentLength: length, textEncodingName: nil), error: nil)
        case .completeFromHeld:
            finish(response: completedResponse(), error: nil)
        case .responseHeldAside(let intoSink):
            let response = head.map { $0.httpURLResponse(for: request.url!) }
            if intoSink {
                // In memory, with nothing else held: an error answer, a refused redirect or
                // challenge. Its body is the body (the serializer judges it).
                // A stream's reader waits for the head of the answer it reads (the operation
                // gets it with the response, in `finish`).
                if let head { bodyChannel?.headArrived(head) }
                bodyAside.withUnsafeBytes { sink?.write($0) }
                withMachine { $0.heldAsideMovedIntoSink() }
                finish(response: response, error: nil)
            } else {
                // An error answer to a download to a file or stream, or to a range request:
                // reported, never mixed into the bytes held, and not a complete download: its
                // resume data stays.
                finish(response: response, error: nil, separateBody: bodyAside, complete: false)
            }
        case .failure(let failure):
            // Too many redirects: the last redirect is the response, as before it was refused.
            var response: HTTPURLResponse?
            if case .tooManyRedirects = failure { response = head.map { $0.httpURLResponse(for: request.url!) } }
            finish(response: response, error: error(for: failure))
        }
    }

    /// Hands the outcome to the operation, once, after the last byte of the body is written.
    ///
    /// The outcome is fixed here, on the network thread, in the operation's lock: from now on
    /// the operation can be neither paused nor cancelled (a cancel that came first turns it
    /// into a cancellation, which keeps its resume data).
    ///
    /// - Parameters:
    ///   - separateBody: A body to report that is not part of the bytes held.
    ///   - complete: Whether the resource is complete (no error, and not an answer reported
    ///     apart from the bytes held); only then is its resume data removed and its integrity
    ///     checked.
    func finish(response: URLResponse?, error: (any Error)?, separateBody: Data? = nil, complete: Bool = true) {
        assertOnNetworkThread()
        guard !reported else { return }
        reported = true
        stopTransfer()
        guard let sink, !sink.isMemory else {
            // Reported now: `conclude` fixes the outcome in the same lock as a racing cancel.
            return deliver(response: response, error: error, separateBody: separateBody, complete: complete && error == nil)
        }
        // The writes close off this thread first. The outcome is fixed already: the machine
        // gave it (or a cancel ended the machine first, and this reports the cancellation), so
        // a pause or cancel in the meantime takes no effect.
        // A file or stream is written off this thread; the outcome waits for the last write.
        sink.close { [self] writeError in
            NetworkThread.shared.perform {
                // The body is not all written: a success would be a lie.
                let error = error ?? writeError
                self.deliver(response: response, error: error, separateBody: separateBody, complete: complete && error == nil)
            }
        }
    }

    /// The rest of ``finish(response:error:separateBody:complete:)``, once the body is written.
    private func deliver(response: URLResponse?, error: (any Error)?, separateBody: Data?, complete: Bool) {
        if !complete { publishResumeData(saving: true) }
        // Keep what arrived even on failure: a partial body helps the caller more than nothing.
        let data = separateBody ?? ((sink?.isMemory ?? true) ? sink?.takeMemory() ?? Data() : nil)
        let (redirects, retries, resumes, held) = withMachine { ($0.redirects, $0.retries, $0.metrics.resumes, $0.held.count) }
        timings?.redirects = redirects
        let outcomeMetadata: Logger.Metadata? = logger.logLevel <= .debug ? [
            RequestLogging.statusKey: "\(head?.statusCode ?? (response as? HTTPURLResponse)?.statusCode ?? 0)",
            RequestLogging.bytesKey: "\(held)",
            RequestLogging.durationKey: "\(timings?.total ?? .zero)",
            RequestLogging.transfersKey: "\(timings?.transfers ?? 0)",
            RequestLogging.retriesKey: "\(retries)",
            RequestLogging.resumesKey: "\(resumes)",
        ] : nil
        operation.conclude(TransferResult(
            response: response, head: head, trailers: error == nil ? trailers : nil, data: data, error: error, complete: complete,
            timings: timings, retries: retries, resumes: resumes,
            log: outcomeMetadata.map { (logger, $0) }, callbackQueue: callbackQueue,
            progress: [uploadProgress, downloadProgress].compactMap { $0 },
            completionCheck: completionCheck(complete: complete), handoff: NetworkThread.shared.callbacks))
        NetworkThread.shared.connectionEnded()
    }
}
