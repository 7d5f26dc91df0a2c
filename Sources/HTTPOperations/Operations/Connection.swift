import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging

/// The network-thread half of a ``URLConnectionOperation``: it runs the curl transfers of one
/// operation (one per redirect or authentication round), sends the body where it belongs,
/// and hands the outcome back to the operation exactly once.
///
/// Thread-safety: created on the thread that starts the operation from a snapshot of its
/// configuration; every method after `init` runs on the network thread (through
/// `NetworkThread.perform` or curl's callbacks), so its fields need no lock.
final class Connection: CurlTransferDelegate, @unchecked Sendable {
    /// Bodies of redirect and challenge responses are held in memory until we know whether they
    /// are final; one larger than this is refused rather than held.
    static let provisionalBodyLimit = 4 << 20

    private let operation: URLConnectionOperation
    private let logger: Logger
    /// Where callbacks run: the completion queue, or, when there are progress callbacks to
    /// keep in order ahead of the outcome, a serial queue targeting it.
    private let callbackQueue: DispatchQueue
    private let completionGroup: DispatchGroup?
    private let maximumRedirects: Int
    private let redirectBlock: RedirectResponseBlock?
    private let challengeBlock: AuthenticationChallengeBlock?
    private let outputStream: OutputStream?
    private let uploadProgress: ProgressReporter?
    private let downloadProgress: ProgressReporter?

    private var request: URLRequest
    private var credential: URLCredential?
    private let trustedCertificateFile: String?
    private var transfer: CurlTransfer?
    private var head: ResponseHead?
    private var expectedLength: Int64 = -1
    private var body = Data()
    /// The body of a response that a redirect or an authentication round may replace.
    private var provisionalBody: Data?
    private var redirectCount = 0
    private var challengeCount = 0
    /// Why we stopped curl ourselves, which beats curl's own word for it.
    private var abortReason: (any Error)?
    private var isPaused = false
    /// A transfer to start once unpaused (a redirect decided while paused).
    private var pendingTransfer: CurlTransfer?
    private var isFinished = false

    init(operation: URLConnectionOperation, configuration: URLConnectionOperation.State) {
        self.operation = operation
        self.logger = configuration.logger
                self.completionGroup = configuration.completionGroup
        self.maximumRedirects = configuration.maximumRedirects
        self.redirectBlock = configuration.redirectBlock
        self.challengeBlock = configuration.challengeBlock
        self.outputStream = configuration.outputStream.value
        self.credential = configuration.credential
        self.trustedCertificateFile = configuration.trustedCertificateFile
        self.request = configuration.currentRequest
        let hasProgress = configuration.uploadProgress != nil || configuration.downloadProgress != nil
        let queue = hasProgress
            ? URLConnectionOperation.makeCallbackQueue(targeting: configuration.completionQueue)
            : configuration.completionQueue ?? .global()
        self.callbackQueue = queue
        self.uploadProgress = configuration.uploadProgress.map { ProgressReporter(block: $0, callbackQueue: queue) }
        self.downloadProgress = configuration.downloadProgress.map { ProgressReporter(block: $0, callbackQueue: queue) }
    }

    // MARK: - Commands (network thread)

    func begin() {
        guard !isFinished else { return }
        outputStream?.open()
        send(request)
    }

    func cancel() {
        guard !isFinished else { return }
        stopTransfer()
        finish(response: nil, error: operation.cancellationError())
    }

    func setPaused(_ paused: Bool) {
        guard !isFinished, paused != isPaused else { return }
        isPaused = paused
        if let transfer {
            NetworkThread.shared.multi.setPaused(transfer, paused)
        } else if !paused, let pending = pendingTransfer {
            pendingTransfer = nil
            start(pending)
        }
    }

    // MARK: - Transfers

    private func send(_ next: URLRequest) {
        request = next
        head = nil
        provisionalBody = nil
        abortReason = nil
        operation.state.withLock { $0.currentRequest = next }
        if let stream = next.httpBodyStream, stream.streamStatus != .notOpen {
            // A stream cannot be read twice; a 307/308 that keeps the body needs a new one.
            finish(response: nil, error: URLError(.requestBodyStreamExhausted, url: next.url,
                                                  description: "The request body stream was already sent once."))
            return
        }
        do {
            // The credential belongs to the origin the caller asked for, not to wherever a
            // redirect leads.
            let sameOrigin = next.url.flatMap { url in operation.request.url.map { RedirectPolicy.isSameOrigin($0, url) } } ?? false
            var transferRequest = try TransferRequest(next, credential: sameOrigin ? credential : nil)
            transferRequest.trustedCertificateFile = trustedCertificateFile
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

    private func start(_ transfer: CurlTransfer) {
        self.transfer = transfer
        NetworkThread.shared.multi.add(transfer)
    }

    private func stopTransfer() {
        if let transfer {
            NetworkThread.shared.multi.remove(transfer)
            self.transfer = nil
        }
        pendingTransfer = nil
    }

    // MARK: - CurlTransferDelegate

    func transfer(_ transfer: CurlTransfer, didReceive head: ResponseHead) {
        self.head = head
        if mayBeReplaced(head) {
            provisionalBody = Data()
            return
        }
        provisionalBody = nil
        // The HTTPURLResponse is built later, when someone asks, off this thread.
        operation.setResponseHead(head, url: request.url!)
        let encoded = head.value(of: "Content-Encoding").map { $0.lowercased() != "identity" } ?? false
        expectedLength = encoded ? -1 : (head.value(of: "Content-Length").flatMap(Int64.init) ?? -1)
        if outputStream == nil, expectedLength > 0 {
            // One allocation instead of repeated grow-and-copy. Pages reserved but never
            // written are not resident, so a server that announces more than it sends costs
            // address space, not memory; the cap bounds even that.
            body.reserveCapacity(Int(min(expectedLength, 1 << 30)))
        }
    }

    func transfer(_ transfer: CurlTransfer, didReceiveBody bytes: UnsafeRawBufferPointer) -> Bool {
        if provisionalBody != nil {
            guard provisionalBody!.count + bytes.count <= Self.provisionalBodyLimit else {
                abortReason = URLError(.dataLengthExceedsMaximum, url: request.url,
                                       description: "A redirect or challenge response body exceeded \(Self.provisionalBodyLimit) bytes.")
                return false
            }
            provisionalBody!.append(contentsOf: bytes)
            return true
        }
        guard write(bytes) else { return false }
        downloadProgress?.record(Int64(bytes.count), expected: expectedLength)
        return true
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
            return finish(response: nil, error: URLError(error, url: request.url))
        }
        guard let head, let url = request.url else {
            // Not HTTP (file: and friends): no head, just bytes.
            let response = URLResponse(url: request.url!, mimeType: nil,
                                       expectedContentLength: Int(transfer.expectedContentLength ?? -1), textEncodingName: nil)
            return finish(response: response, error: nil)
        }
        if provisionalBody != nil {
            let response = head.httpURLResponse(for: url)
            if RedirectPolicy.redirectStatusCodes.contains(head.statusCode), let location = transfer.redirectURL {
                return redirect(response, to: location)
            }
            if head.statusCode == 401 || head.statusCode == 407 {
                return challenge(response, credentialWasSent: transfer.request.credential != nil)
            }
            return keepProvisional(response)
        }
        finish(response: nil, error: nil)
    }

    // MARK: - Body

    private func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let outputStream else {
            body.append(contentsOf: bytes)
            return true
        }
        var offset = 0
        while offset < bytes.count {
            let written = outputStream.write(bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self),
                                             maxLength: bytes.count - offset)
            guard written > 0 else {
                let reason = outputStream.streamError.map { "\($0)" } ?? "the stream accepted no bytes"
                abortReason = URLError(.cannotWriteToFile, url: request.url, description: "Writing the response body failed: \(reason).")
                return false
            }
            offset += written
        }
        return true
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
                if let decision { self.send(decision) } else { self.keepProvisional(response) }
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
                    self.keepProvisional(response)
                }
            }
        }
    }

    /// A redirect or challenge was refused: its response, and its body, are the result.
    private func keepProvisional(_ response: HTTPURLResponse) {
        let held = provisionalBody ?? Data()
        provisionalBody = nil
        operation.state.withLock { $0.response = response }
        _ = held.withUnsafeBytes { write($0) }
        finish(response: response, error: abortReason)
    }

    // MARK: - The end

    private func finish(response: URLResponse?, error: (any Error)?) {
        guard !isFinished else { return }
        isFinished = true
        stopTransfer()
        outputStream?.close()
        if let error {
            logger.debug("transfer failed", metadata: ["error": "\(error)"])
        }
        // Keep what arrived even on failure: a partial body helps the caller more than nothing.
        let data = outputStream == nil ? body : nil
        operation.conclude(response: response, data: data, error: error, on: callbackQueue,
                           progress: [uploadProgress, downloadProgress].compactMap { $0 })
    }
}

extension RequestBody {
    /// The body's length when known up front.
    var length: Int64? {
        switch self {
        case .none: 0
        case .data(let data): Int64(data.count)
        case .stream(_, let length): length
        }
    }
}
