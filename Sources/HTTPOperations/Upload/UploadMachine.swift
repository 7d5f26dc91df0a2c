import Foundation

/// The decisions of one resumable upload, without I/O: which request comes next, how long to
/// wait after a failure, whether an offset the server reports can be believed, and when the
/// upload is complete. ``ResumableUploadOperation`` carries its actions out; tests drive it
/// alone (`UploadDecisions`).
///
/// What it promises: a byte is only ever sent from the offset the server last reported (by an
/// append's answer or by an offset request, never assumed after a failure); an offset past the
/// length, past every byte that could have been sent, or below one the server acknowledged ends
/// the upload with an ``UploadError``; the upload is complete only when the server reported
/// the whole length (and, for the IETF draft, the upload complete).
struct UploadMachine: Sendable {
    /// The requests of the protocols.
    enum Step: Sendable, Equatable {
        /// tus `OPTIONS`: what the server supports.
        case discover
        /// `POST` to the creation URL, carrying the source's first `count` bytes (0: none).
        case create(count: Int)
        /// `HEAD` of the upload: the server's offset.
        case queryOffset
        /// `PATCH` of `count` bytes from `offset` (0 bytes: the IETF draft's "complete now").
        case append(offset: Int64, count: Int)
        /// `DELETE` of the upload (a cancel that terminates).
        case terminate
    }

    /// What the operation does next.
    enum Action: Sendable, Equatable {
        case request(Step)
        case wait(Duration)
        case awaitResume
        case finish(End)
    }

    /// How the upload ended.
    enum End: Sendable, Equatable {
        case completed
        case cancelled
        /// An error of the protocol's own.
        case failed(UploadError.Reason)
        /// Failures in a row exhausted the retries; the last one's error goes with it.
        case retriesExhausted(attempts: Int)
        /// An answer with a status the protocol gives no meaning to.
        case refused(status: Int)
        /// A failure no retry can cure (a refused certificate, a bad URL).
        case transportFailed
    }

    enum Phase: Sendable, Equatable {
        case idle, running, waiting, paused, cancelling, finished
    }

    /// What came back for a step: a status and the fields the protocols read, or a failure.
    struct Answer: Sendable, Equatable {
        var status: Int?
        var offset: Int64?
        /// The IETF draft's `Upload-Complete`.
        var complete: Bool?
        var location: URL?
        /// What the tus `OPTIONS` answer said.
        var discovery: TusDiscovery?
        /// A transport failure that retries may cure (a drop, a timeout).
        var failedTransiently = false
        /// A transport failure no retry cures.
        var failedForGood = false

        static func status(_ status: Int, offset: Int64? = nil, complete: Bool? = nil, location: URL? = nil) -> Answer {
            Answer(status: status, offset: offset, complete: complete, location: location)
        }
        static var dropped: Answer { Answer(failedTransiently: true) }
    }

    let length: Int64
    let configuration: UploadConfiguration
    private(set) var phase = Phase.idle
    /// Where the upload lives on the server, once created (or from resume data).
    private(set) var uploadURL: URL?
    /// The highest offset the server reported: what it keeps.
    private(set) var acknowledged: Int64
    /// The end of every byte handed to a request so far: no server can hold more.
    private(set) var sentBound: Int64
    private(set) var failures = 0
    /// Counts pauses, resumes and cancels, so a wait can tell it was interrupted.
    private(set) var interruptions = 0
    /// Whether a creation may carry data (tus: the server advertised creation-with-upload).
    private(set) var createsWithData: Bool
    /// The checksum algorithm each tus append names, once discovery chose one.
    private(set) var checksumAlgorithm: UploadChecksum.Algorithm?

    /// An upload not yet created.
    init(length: Int64, configuration: UploadConfiguration) {
        self.length = length
        self.configuration = configuration
        acknowledged = 0
        sentBound = 0
        createsWithData = configuration.uploadProtocol == .ietfDraft && configuration.sendsDataWithCreation
    }

    /// An upload created earlier (resume data): its offset is asked again before any byte.
    init(length: Int64, configuration: UploadConfiguration, uploadURL: URL, acknowledged: Int64, sentBound: Int64,
         checksumAlgorithm: UploadChecksum.Algorithm?) {
        self.init(length: length, configuration: configuration)
        self.uploadURL = uploadURL
        self.acknowledged = acknowledged
        self.sentBound = max(sentBound, acknowledged)
        self.checksumAlgorithm = checksumAlgorithm
    }

    var isStopping: Bool { phase == .cancelling || phase == .finished }

    // MARK: - Driving

    /// The first action.
    mutating func start() -> Action {
        guard phase == .idle else { return .awaitResume }
        phase = .running
        return nextAfterResume()
    }

    /// A wait (or a pause) ended: what follows.
    mutating func waited() -> Action {
        switch phase {
        case .cancelling: return stopAfterCancel()
        case .paused: return .awaitResume
        case .finished: return .finish(.cancelled)
        case .idle, .running, .waiting:
            phase = .running
            return nextAfterResume()
        }
    }

    /// After a start, a wait or a resume: the offset is asked whenever the upload exists.
    private mutating func nextAfterResume() -> Action {
        if uploadURL != nil { return .request(.queryOffset) }
        if configuration.uploadProtocol == .tus, !discovered { return .request(.discover) }
        return creation()
    }

    private var discovered = false

    private mutating func creation() -> Action {
        let count = createsWithData ? Int(min(Int64(configuration.chunkSize), length)) : 0
        sentBound = max(sentBound, Int64(count))
        return .request(.create(count: count))
    }

    /// The IETF draft's 104 (or a final answer) named the upload's URL.
    mutating func learnedLocation(_ url: URL) {
        if uploadURL == nil { uploadURL = url }
    }

    /// `step`'s answer. `jitter` is drawn in 0..<1 by the caller (tests pass their own).
    mutating func answered(_ step: Step, _ answer: Answer, jitter: Double) -> Action {
        switch phase {
        case .cancelling:
            if step == .terminate { return finish(.cancelled) }
            return stopAfterCancel()
        case .paused: return .awaitResume
        case .finished: return .finish(.cancelled)
        case .idle, .running, .waiting: break
        }
        if answer.failedForGood { return finish(.transportFailed) }
        guard let status = answer.status, !answer.failedTransiently else { return failed(jitter: jitter) }
        switch status {
        case 200..<300:
            return succeeded(step, answer, jitter: jitter)
        case 409, 460:
            // An offset that does not match (409), bytes that arrived damaged (460): ask again at once.
            return failed(jitter: jitter, wait: false)
        case 404, 410:
            if step == .discover { return afterDiscovery(nil) }
            if uploadURL == nil { return finish(.refused(status: status)) }
            return finish(.failed(.uploadGone(status: status)))
        case 412:
            return finish(.failed(.unsupportedServer("the server refused the protocol version (412)")))
        case 413:
            return finish(.failed(.tooLarge(length: length, limit: nil)))
        case 408, 423, 429, 500..<600:
            return failed(jitter: jitter)
        default:
            if step == .discover { return afterDiscovery(nil) }
            return finish(.refused(status: status))
        }
    }

    private mutating func succeeded(_ step: Step, _ answer: Answer, jitter: Double) -> Action {
        switch step {
        case .discover:
            return afterDiscovery(answer.discovery)
        case .create(let count):
            guard let location = answer.location ?? uploadURL else {
                return finish(.failed(.invalidAnswer("the creation's answer has no Location")))
            }
            uploadURL = location
            if let offset = answer.offset { return accept(offset, complete: answer.complete) }
            // No offset: with no data sent the server holds none; with data, ask.
            return count == 0 ? append(from: 0) : .request(.queryOffset)
        case .queryOffset:
            guard let offset = answer.offset else {
                return finish(.failed(.invalidAnswer("the offset request's answer has no valid Upload-Offset")))
            }
            return accept(offset, complete: answer.complete)
        case .append(let offset, let count):
            // An answer without an offset (the IETF draft's last append may have none) is
            // followed by asking for it. One with fewer bytes than sent is believed: a server may
            // keep less (the rest goes again); more than sent is caught by `accept`; none kept
            // counts as a failure (a server that never keeps a byte must not loop for ever).
            guard let reported = answer.offset else { return .request(.queryOffset) }
            if count > 0, reported == offset, reported == acknowledged { return failed(jitter: jitter) }
            return accept(reported, complete: answer.complete)
        case .terminate:
            return finish(.cancelled)
        }
    }

    /// Checks an offset the server reported and goes on from it.
    private mutating func accept(_ offset: Int64, complete: Bool?) -> Action {
        if offset > length { return finish(.failed(.offsetBeyondLength(reported: offset, length: length))) }
        if offset > sentBound { return finish(.failed(.offsetAhead(reported: offset, sent: sentBound))) }
        if offset < acknowledged { return finish(.failed(.offsetBehind(reported: offset, acknowledged: acknowledged))) }
        if offset > acknowledged { failures = 0 }
        acknowledged = offset
        if offset == length {
            // The IETF draft: all bytes arrived, but the upload is complete only once said so.
            if configuration.uploadProtocol == .ietfDraft, complete != true { return append(from: offset) }
            return finish(.completed)
        }
        return append(from: offset)
    }

    private mutating func append(from offset: Int64) -> Action {
        let count = Int(min(Int64(configuration.chunkSize), length - offset))
        sentBound = max(sentBound, offset + Int64(count))
        return .request(.append(offset: offset, count: count))
    }

    private mutating func afterDiscovery(_ discovery: TusDiscovery?) -> Action {
        discovered = true
        if let discovery {
            if !discovery.versions.isEmpty, !discovery.versions.contains("1.0.0") {
                return finish(.failed(.unsupportedServer("Tus-Version \(discovery.versions.joined(separator: ",")) lacks 1.0.0")))
            }
            if !discovery.extensions.contains("creation") {
                return finish(.failed(.unsupportedServer("the server does not advertise the creation extension")))
            }
            if let limit = discovery.maximumSize, length > limit {
                return finish(.failed(.tooLarge(length: length, limit: limit)))
            }
            createsWithData = configuration.sendsDataWithCreation && discovery.extensions.contains("creation-with-upload")
            if configuration.usesChecksums, discovery.extensions.contains("checksum") {
                checksumAlgorithm = UploadChecksum.Algorithm.strongest(of: discovery.checksumAlgorithms)
            }
        }
        // No discovery (an OPTIONS the server refused): core and creation only.
        return creation()
    }

    /// A request failed without an answer the protocol reads: wait (unless told not to), then
    /// ask the offset again, or retry the step that had no upload yet.
    private mutating func failed(jitter: Double, wait: Bool = true) -> Action {
        failures += 1
        if failures > configuration.maximumConsecutiveFailures { return finish(.retriesExhausted(attempts: failures)) }
        guard wait else { return nextAfterResume() }
        phase = .waiting
        return .wait(RetryBackoff.delay(base: configuration.retryDelay, cap: configuration.maximumRetryDelay,
                                        failures: failures, jitter: configuration.jitter, draw: jitter))
    }

    private mutating func finish(_ end: End) -> Action {
        phase = .finished
        return .finish(end)
    }

    // MARK: - Pause, resume, cancel

    /// Holds the upload; false when there is nothing to pause.
    mutating func pause() -> Bool {
        guard phase == .running || phase == .waiting else { return false }
        phase = .paused
        interruptions += 1
        return true
    }

    /// Lets a paused upload go on (its offset asked first); false when it was not paused.
    mutating func resume() -> Bool {
        guard phase == .paused else { return false }
        phase = .waiting
        interruptions += 1
        return true
    }

    /// Stops the upload; false when it was already stopping.
    mutating func cancel() -> Bool {
        guard !isStopping else { return false }
        phase = .cancelling
        interruptions += 1
        return true
    }

    /// Ends the upload without another request (its source could not be read).
    mutating func abandon() {
        phase = .finished
        interruptions += 1
    }

    private mutating func stopAfterCancel() -> Action {
        if configuration.terminatesOnCancel, uploadURL != nil {
            // The DELETE's answer, whatever it is, finishes the upload (`answered` sees .terminate).
            return .request(.terminate)
        }
        return finish(.cancelled)
    }
}
