import CCurl
import Foundation
import Logging

/// The network-thread half of a ``URLConnectionOperation``: it runs the curl transfers of one
/// operation (one per redirect, authentication round, resume or retry), sends the body where
/// it belongs, and hands the outcome back to the operation exactly once.
///
/// Resuming — pause, automatic retry after a drop, reading range answers — lives in
/// `Connection+Resume.swift`.
///
/// Thread-safety: created on the thread that starts the operation from a snapshot of its
/// configuration; every method after `init` runs on the network thread (through
/// `NetworkThread.perform` or curl's callbacks), so its fields need no lock.
final class Connection: CurlTransferDelegate, @unchecked Sendable {
    /// Bodies of redirect and challenge responses are held in memory until we know whether they
    /// are final; one larger than this is refused rather than held.
    static let provisionalBodyLimit = 4 << 20

    let operation: URLConnectionOperation
    let logger: Logger
    /// Where callbacks run: the completion queue, or, when there are progress callbacks to
    /// keep in order ahead of the outcome, a serial queue targeting it.
    let callbackQueue: DispatchQueue
    let completionGroup: DispatchGroup?
    private let maximumRedirects: Int
    private let redirectBlock: RedirectResponseBlock?
    private let challengeBlock: AuthenticationChallengeBlock?
    private let outputStream: OutputStream?
    let uploadProgress: ProgressReporter?
    let downloadProgress: ProgressReporter?
    private let securityPolicy: SecurityPolicy
    let download: DownloadConfiguration

    var request: URLRequest
    private var credential: URLCredential?
    var transfer: CurlTransfer?
    var sink: ResponseBodySink?
    var head: ResponseHead?
    var expectedLength: Int64 = -1
    /// The body of a response that must not reach the sink: a redirect or challenge that may
    /// be replaced, or an answer to a range request that is not part of the resource.
    var bodyAside: Data?
    private var redirectCount = 0
    private var challengeCount = 0
    /// Why we stopped curl ourselves, which beats curl's own word for it.
    var abortReason: (any Error)?
    var isPaused = false
    /// A transfer to start once unpaused (a redirect decided while paused).
    var pendingTransfer: CurlTransfer?
    var isFinished = false

    // Resume state, maintained by Connection+Resume.swift.
    /// The offset a `Range` was sent for in the current transfer; nil for a plain request.
    var rangeSentFrom: Int64?
    /// The validator of the resource whose bytes are held.
    var validator: ResumeValidator?
    /// Its complete length, when known.
    var knownLength: Int64?
    /// The transfer was taken off the multi handle (paused, or waiting to retry).
    var interrupted = false
    var retries = 0
    var metrics = DownloadMetrics()
    /// A 416 said the bytes held are the whole resource.
    var completeWithoutBody = false
    /// Serial queue that writes the body to its file or stream, and writes and removes the
    /// sidecar resume data after the bytes it describes. Made on first use (network thread):
    /// bodies in memory never need it.
    lazy var writerQueue = DispatchQueue(label: "HTTPOperations.writer")
    /// The transfer that was told to wait for the writer (see ``BodyWriter``), until it hears
    /// there is room.
    private var transferWaitingForRoom: CurlTransfer?
    /// The first request's transfer, worked out in `init` on the thread that starts the
    /// operation, so the network thread does no Foundation parsing for it (redirects and
    /// authentication rounds are built there, rarely).
    private var firstTransfer: Result<TransferRequest, any Error>?

    /// - Parameter paused: The operation was paused before its transfer began.
    init(operation: URLConnectionOperation, configuration: URLConnectionOperation.State, paused: Bool = false) {
        self.operation = operation
        self.isPaused = paused
        self.logger = configuration.logger
        self.completionGroup = configuration.completionGroup
        self.maximumRedirects = configuration.maximumRedirects
        self.redirectBlock = configuration.redirectBlock
        self.challengeBlock = configuration.challengeBlock
        self.outputStream = configuration.outputStream.value
        self.credential = configuration.credential
        self.securityPolicy = configuration.securityPolicy
        self.download = configuration.download
        self.validator = configuration.download.validator
        self.knownLength = configuration.download.knownLength
        self.request = configuration.currentRequest
        let hasProgress = configuration.uploadProgress != nil || configuration.downloadProgress != nil
        let queue = hasProgress
            ? URLConnectionOperation.makeCallbackQueue(targeting: configuration.completionQueue)
            : configuration.completionQueue ?? .global()
        self.callbackQueue = queue
        self.uploadProgress = configuration.uploadProgress.map { ProgressReporter(block: $0, callbackQueue: queue) }
        self.downloadProgress = configuration.downloadProgress.map { ProgressReporter(block: $0, callbackQueue: queue) }
        self.firstTransfer = Result { try transferRequest(for: configuration.currentRequest) }
    }

    // MARK: - Commands (network thread)

    func begin() {
        guard !isFinished else { return }
        do {
            let continuing = download.continuing || download.validator != nil
            sink = try ResponseBodySink(destination: download.destination, stream: outputStream, continuing: continuing,
                                        writerQueue: { writerQueue }, roomAvailable: { [weak self] in
                                            // Weak: the sink's writer is ours; a strong capture would be a cycle.
                                            guard let connection = self else { return }
                                            NetworkThread.shared.perform { connection.writerHasRoom() }
                                        })
        } catch {
            return finish(response: nil, error: error)
        }
        if let held = sink?.heldBytes, held > 0 {
            metrics.resumes += 1
            metrics.firstResumeOffset = held
            downloadProgress?.reset(total: held, expected: knownLength ?? -1)
        }
        let first = firstTransfer
        firstTransfer = nil
        send(request, prepared: first)
    }

    func cancel() {
        guard !isFinished else { return }
        stopTransfer()
        finish(response: nil, error: operation.cancellationError())
    }

    // MARK: - Transfers

    /// Sends `next` in a new transfer.
    ///
    /// - Parameter prepared: Its transfer, when worked out before (the first request's).
    func send(_ next: URLRequest, prepared: Result<TransferRequest, any Error>? = nil) {
        request = next
        head = nil
        bodyAside = nil
        abortReason = nil
        completeWithoutBody = false
        operation.state.withLock { $0.currentRequest = next }
        if let stream = next.httpBodyStream, stream.streamStatus != .notOpen,
           (stream as? RewindableBodyStream)?.rewind() != true {
            // A plain stream cannot be read twice; a 307/308 that keeps the body needs a new one.
            finish(response: nil, error: URLError(.requestBodyStreamExhausted, url: next.url,
                                                  description: "The request body stream was already sent once."))
            return
        }
        do {
            var transferRequest = try (prepared ?? Result { try self.transferRequest(for: next) }).get()
            addRangeHeaders(to: &transferRequest)
            let transfer = CurlTransfer(request: transferRequest, delegate: self)
            if isPaused {
                pendingTransfer = transfer
            } else {
                start(transfer)
            }
        } catch {
            finish(response: nil, error: error)
        }
    }

    /// What curl needs to send `request`.
    private func transferRequest(for request: URLRequest) throws -> TransferRequest {
        // The credential belongs to the origin the caller asked for, not to wherever a
        // redirect leads. (Foundation's URL parses its host on each call: asked only when
        // there is a credential to give.)
        let sameOrigin = credential != nil
            && (request.url.flatMap { url in operation.request.url.map { RedirectPolicy.isSameOrigin($0, url) } } ?? false)
        var transferRequest = try TransferRequest(request, credential: sameOrigin ? credential : nil)
        transferRequest.securityPolicy = securityPolicy
        return transferRequest
    }

    private func start(_ transfer: CurlTransfer) {
        self.transfer = transfer
        NetworkThread.shared.multi.add(transfer)
    }

    /// Starts the transfer that waited for the pause to end, if any; true when there was one.
    func startPendingTransfer() -> Bool {
        guard let pending = pendingTransfer else { return false }
        pendingTransfer = nil
        start(pending)
        return true
    }

    func stopTransfer() {
        if let transfer {
            NetworkThread.shared.multi.remove(transfer)
            self.transfer = nil
        }
        pendingTransfer = nil
    }

    // MARK: - CurlTransferDelegate

    func transfer(_ transfer: CurlTransfer, didReceive head: ResponseHead) -> Bool {
        self.head = head
        if rangeSentFrom != nil, !readRangeAnswer(head) {
            return false
        }
        guard bodyAside == nil else { return true }
        if mayBeReplaced(head) {
            bodyAside = Data()
            return true
        }
        if rangeSentFrom == nil {
            // A whole response: it names the version and length of what we now hold.
            let length = head.decodedContentLength
            adoptIdentity(of: head, length: length)
            expectedLength = length ?? -1
            sink?.reserve(expectedLength)
        }
        // The HTTPURLResponse is built later, when someone asks, off this thread.
        operation.setResponseHead(head, url: request.url!)
        return true
    }

    func transfer(_ transfer: CurlTransfer, didReceiveBody bytes: UnsafeRawBufferPointer) -> BodyDisposition {
        if bodyAside != nil {
            guard bodyAside!.count + bytes.count <= Self.provisionalBodyLimit else {
                abortReason = URLError(.dataLengthExceedsMaximum, url: request.url,
                                       description: "A redirect, challenge or error body exceeded \(Self.provisionalBodyLimit) bytes.")
                return .abort
            }
            bodyAside!.append(contentsOf: bytes)
            return .taken
        }
        guard let sink else { return .taken }
        switch sink.admit(bytes.count) {
        case .accepted:
            break
        case .wait:
            // The writer is behind: curl keeps these bytes and stops reading the socket.
            transferWaitingForRoom = transfer
            return .later
        case .failed(let failure):
            abortReason = failure
            return .abort
        }
        sink.write(bytes)
        downloadProgress?.record(Int64(bytes.count), expected: expectedLength)
        return .taken
    }

    /// The writer made room: let the transfer that waited for it go on, if it still runs.
    private func writerHasRoom() {
        guard let waiting = transferWaitingForRoom else { return }
        transferWaitingForRoom = nil
        guard waiting === transfer, !isFinished else { return }
        NetworkThread.shared.multi.resumeReceiving(waiting)
    }

    func transfer(_ transfer: CurlTransfer, didSendBodyBytes count: Int) {
        uploadProgress?.record(Int64(count), expected: transfer.request.body.length ?? -1)
    }

    func transfer(_ transfer: CurlTransfer, didCompleteWith error: CurlError?) {
        guard transfer === self.transfer else { return }
        self.transfer = nil
        if let abortReason {
            return finish(response: nil, error: abortReason)
        }
        if let error {
            let failure = URLError(error, url: request.url)
            if scheduleRetry(after: failure) { return }
            return finish(response: nil, error: failure)
        }
        if completeWithoutBody {
            return finish(response: completedResponse(), error: nil)
        }
        guard let head, let url = request.url else {
            // Not HTTP (file: and friends): no head, just bytes.
            let response = URLResponse(url: request.url!, mimeType: nil,
                                       expectedContentLength: Int(transfer.expectedContentLength ?? -1), textEncodingName: nil)
            return finish(response: response, error: nil)
        }
        if bodyAside != nil {
            let response = head.httpURLResponse(for: url)
            if RedirectPolicy.redirectStatusCodes.contains(head.statusCode), let location = transfer.redirectURL,
               mayBeReplaced(head) {
                return redirect(response, to: location)
            }
            if head.statusCode == 401 || head.statusCode == 407, mayBeReplaced(head) {
                return challenge(response, credentialWasSent: transfer.request.credential != nil)
            }
            return keepBodyAside(response)
        }
        finish(response: nil, error: nil)
    }

    // MARK: - Redirects and challenges

    /// Whether a redirect or an authentication round may replace this response, so its body
    /// must wait on the side.
    private func mayBeReplaced(_ head: ResponseHead) -> Bool {
        if RedirectPolicy.redirectStatusCodes.contains(head.statusCode) {
            return maximumRedirects > 0 && head.value(of: "Location") != nil
        }
        if head.statusCode == 401 || head.statusCode == 407 {
            return challengeBlock != nil && challengeCount < 3
        }
        return false
    }

    private func redirect(_ response: HTTPURLResponse, to location: String) {
        redirectCount += 1
        guard redirectCount <= maximumRedirects else {
            return finish(response: response, error: URLError(.httpTooManyRedirects, url: request.url,
                                                              description: "More than \(maximumRedirects) redirects."))
        }
        guard let target = URL(string: location), ["http", "https"].contains(target.scheme?.lowercased() ?? "") else {
            return finish(response: response, error: URLError(.unsupportedURL, url: request.url,
                                                              description: "Refusing to follow a redirect to \(location)."))
        }
        let proposed = RedirectPolicy.request(following: response.statusCode, from: request, to: target)
        logger.debug("redirect", metadata: ["status": "\(response.statusCode)", "location": "\(location)"])
        guard let redirectBlock else { return send(proposed) }
        let operation = self.operation
        callbackQueue.async(group: completionGroup) {
            let decision = redirectBlock(operation, proposed, response)
            NetworkThread.shared.perform {
                guard !self.isFinished else { return }
                if let decision { self.send(decision) } else { self.keepBodyAside(response) }
            }
        }
    }

    private func challenge(_ response: HTTPURLResponse, credentialWasSent: Bool) {
        challengeCount += 1
        let challenge = AuthenticationChallenge(
            response: response, previousFailureCount: challengeCount - 1 + (credentialWasSent ? 1 : 0))
        let (operation, block) = (self.operation, challengeBlock!)
        callbackQueue.async(group: completionGroup) {
            let answer = block(operation, challenge)
            NetworkThread.shared.perform {
                guard !self.isFinished else { return }
                if let answer {
                    self.credential = answer
                    self.send(self.request)
                } else {
                    self.keepBodyAside(response)
                }
            }
        }
    }

    /// The response whose body was held aside is the result: a refused redirect or challenge
    /// (its body becomes the body), or an error answer to a range request (its body is
    /// reported, but never mixed into the bytes held).
    private func keepBodyAside(_ response: HTTPURLResponse) {
        let held = bodyAside ?? Data()
        bodyAside = nil
        operation.state.withLock { $0.response = response }
        if rangeSentFrom == nil, sink?.heldBytes == 0 {
            held.withUnsafeBytes { sink?.write($0) }
            finish(response: response, error: abortReason)
        } else {
            finish(response: response, error: abortReason, separateBody: held)
        }
    }

    // MARK: - The end

    /// Hands the outcome to the operation, once, after the last byte of the body is written.
    ///
    /// - Parameter separateBody: A body to report that is not part of the bytes held.
    func finish(response: URLResponse?, error: (any Error)?, separateBody: Data? = nil) {
        guard !isFinished else { return }
        isFinished = true
        stopTransfer()
        guard let sink, !sink.isMemory else {
            return report(response: response, error: error, separateBody: separateBody)
        }
        // A file or stream is written off this thread; the outcome waits for the last write.
        sink.close { [self] writeError in
            NetworkThread.shared.perform {
                // The body is not all written: a success would be a lie.
                self.report(response: response, error: error ?? writeError, separateBody: separateBody)
            }
        }
    }

    /// The rest of ``finish(response:error:separateBody:)``, once the body is written.
    private func report(response: URLResponse?, error: (any Error)?, separateBody: Data?) {
        if let error {
            logger.debug("transfer failed", metadata: ["error": "\(error)"])
        }
        if error != nil {
            publishResumeData(saving: true)
        } else {
            // Complete: there is nothing left to resume.
            publishMetrics()
            operation.state.withLock { $0.resumeData = nil }
        }
        // Keep what arrived even on failure: a partial body helps the caller more than nothing.
        let data = separateBody ?? ((sink?.isMemory ?? true) ? sink?.takeMemory() ?? Data() : nil)
        operation.conclude(response: response, data: data, error: error, on: callbackQueue,
                           progress: [uploadProgress, downloadProgress].compactMap { $0 },
                           completion: completionCheck(succeeded: error == nil),
                           handoff: NetworkThread.shared.callbacks)
    }
}
