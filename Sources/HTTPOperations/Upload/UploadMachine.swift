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
struct UploadMachine: Sendable, LoopMachine {
    /// The requests of the protocols.
    enum Step: Sendable, Equatable {
        /// `OPTIONS`: what the server supports (tus's extensions, the draft's `Upload-Limit`).
        case discover
        /// `POST` to the creation URL, carrying the source's first `count` bytes (0: none).
        case create(count: Int)
        /// `HEAD` of the upload: the server's offset.
        case queryOffset
        /// `PATCH` of `count` bytes from `offset` (0 bytes: the IETF draft's "complete now").
        case append(offset: Int64, count: Int)
        /// `DELETE` of the upload (a cancel that terminates).
        case terminate

        /// Whether the request carries bytes of the source.
        var carriesBytes: Bool {
            switch self {
            case .create(let count), .append(_, let count): count > 0
            case .discover, .queryOffset, .terminate: false
            }
        }
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
        /// `Upload-Length`, when the answer names it.
        var length: Int64?
        var location: URL?
        /// A `Location` that would take the upload from https to plain http: refused.
        var insecureLocation: URL?
        /// What the `OPTIONS` answer said.
        var discovery: UploadDiscovery?
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
    /// The most bytes one request carries: the configuration's chunk size, or less when the
    /// draft's `Upload-Limit` says so.
    private(set) var appendSize: Int
    /// The draft: whether the server is known to support resumable uploads (its `OPTIONS`
    /// answer carried `Upload-Limit`). Until then a creation carries the whole upload and says
    /// `Upload-Complete: ?1`: a server that does not resume stores the whole file, never a part
    /// taken for the whole.
    private(set) var serverResumes = false
    /// The checksum algorithm each tus append names, once discovery chose one.
    private(set) var checksumAlgorithm: UploadChecksum.Algorithm?
    /// Whether a terminating cancel's `DELETE` was answered as done (2xx, or 404/410: gone).
    private(set) var terminated = false

    /// An upload not yet created.
    init(length: Int64, configuration: UploadConfiguration) {
        self.length = length
        self.configuration = configuration
        acknowledged = 0
        sentBound = 0
        createsWithData = configuration.uploadProtocol == .ietfDraft && configuration.sendsDataWithCreation
        appendSize = max(1, configuration.chunkSize)
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
        if !discovered { return .request(.discover) }
        return creation()
    }

    private var discovered = false

    private mutating func creation() -> Action {
        let count: Int = if configuration.uploadProtocol == .ietfDraft, !serverResumes {
            Int(length)
        } else {
            createsWithData ? Int(min(Int64(appendSize), length)) : 0
        }
        sentBound = max(sentBound, Int64(count))
        return .request(.create(count: count))
    }

    /// The IETF draft's 104 (or a final answer) named the upload's URL.
    mutating func learnedLocation(_ url: URL) {
        if uploadURL == nil { uploadURL = url }
    }

    /// `step`'s answer. `jitter` is drawn in 0..<1 by the caller (tests pass their own).
    /// `interruptedSince`: ``interruptions`` when the request was sent; a failure of a request
    /// that a pause (and a resume) interrupted since is neither counted nor final: the offset
    /// is asked.
    mutating func answered(_ step: Step, _ answer: Answer, jitter: Double, interruptedSince sent: Int? = nil) -> Action {
        switch phase {
        case .cancelling:
            if step == .terminate {
                terminated = answer.status.map { (200..<300).contains($0) || $0 == 404 || $0 == 410 } ?? false
                return finish(.cancelled)
            }
            return stopAfterCancel()
        case .paused: return .awaitResume
        case .finished: return .finish(.cancelled)
        case .idle, .running, .waiting: break
        }
        let failedWithoutAnswer = answer.failedForGood || answer.failedTransiently || answer.status == nil
        if failedWithoutAnswer, let sent, sent != interruptions {
            phase = .running
            return nextAfterResume()
        }
        if answer.failedForGood { return finish(.transportFailed) }
        guard let status = answer.status, !answer.failedTransiently else { return failed(jitter: jitter) }
        // Discovery is optional: a server that refuses OPTIONS (405, 501, even a 5xx or 429)
        // gets the protocol's plainest form, not retries.
        if step == .discover, !(200..<300).contains(status) { return afterDiscovery(nil) }
        switch status {
        case 200..<300:
            return succeeded(step, answer, jitter: jitter)
        case 409, 460:
            // An offset that does not match (409), bytes that arrived damaged (460): ask again at once.
            return failed(jitter: jitter, wait: false)
        case 404, 410:
            if uploadURL == nil { return finish(.refused(status: status)) }
            return finish(.failed(.uploadGone(status: status)))
        case 412:
            return finish(.failed(.unsupportedServer("the server refused the protocol version (412)")))
        case 413:
            return finish(.failed(.tooLarge(length: length, limit: nil)))
        case 408, 423, 429, 500..<600:
            return failed(jitter: jitter)
        default:
            return finish(.refused(status: status))
        }
    }

    private mutating func succeeded(_ step: Step, _ answer: Answer, jitter: Double) -> Action {
        switch step {
        case .discover:
            return afterDiscovery(answer.discovery)
        case .create(let count):
            if let insecure = answer.insecureLocation {
                // The bytes would go in clear, and the template's fields with them.
                return finish(.failed(.invalidAnswer("the upload's URL \(insecure.absoluteString) is plain http, its creation's https")))
            }
            guard let location = answer.location ?? uploadURL else {
                // A server that does not resume (no 104, no Location) took the whole upload, if
                // the creation carried it all and said so: that is a completed upload.
                if saysComplete(step), answer.complete != false { return finish(.completed) }
                return finish(.failed(.invalidAnswer("the creation's answer has no Location")))
            }
            uploadURL = location
            if let offset = answer.offset { return accept(offset, answer, after: step, jitter: jitter) }
            if saysComplete(step), answer.complete != false { return finish(.completed) }
            // No offset: with no data sent the server holds none; with data, ask.
            return count == 0 ? append(from: 0) : .request(.queryOffset)
        case .queryOffset:
            guard let offset = answer.offset else {
                return finish(.failed(.invalidAnswer("the offset request's answer has no valid Upload-Offset")))
            }
            return accept(offset, answer, after: step, jitter: jitter)
        case .append(let offset, let count):
            // A success to the draft's completing append may name no offset (draft 05's own
            // examples): the server took the whole upload. Any other answer without an offset
            // counts as a failure and asks for it (so a server that never says cannot make the
            // upload alternate for ever). One with fewer bytes than sent is believed: a server may
            // keep less (the rest goes again); more than sent is caught by `accept`; none kept
            // counts as a failure.
            guard let reported = answer.offset else {
                if saysComplete(step), answer.complete != false { return finish(.completed) }
                return failed(jitter: jitter, wait: false)
            }
            if count > 0, reported == offset, reported == acknowledged { return failed(jitter: jitter) }
            return accept(reported, answer, after: step, jitter: jitter)
        case .terminate:
            return finish(.cancelled)
        }
    }

    /// Whether `step` told the server (the IETF draft's `Upload-Complete: ?1`) that it ends
    /// the upload.
    private func saysComplete(_ step: Step) -> Bool {
        guard configuration.uploadProtocol == .ietfDraft else { return false }
        return switch step {
        case .create(let count): Int64(count) == length
        case .append(let offset, let count): offset + Int64(count) == length
        case .discover, .queryOffset, .terminate: false
        }
    }

    /// Checks an offset the server reported in `answer` to `step` and goes on from it.
    private mutating func accept(_ offset: Int64, _ answer: UploadMachine.Answer, after step: Step, jitter: Double) -> Action {
        if let declared = answer.length, declared != length {
            return finish(.failed(.invalidAnswer("the server's Upload-Length is \(declared), not \(length)")))
        }
        if offset > length { return finish(.failed(.offsetBeyondLength(reported: offset, length: length))) }
        if offset > sentBound { return finish(.failed(.offsetAhead(reported: offset, sent: sentBound))) }
        if offset < acknowledged { return finish(.failed(.offsetBehind(reported: offset, acknowledged: acknowledged))) }
        if offset > acknowledged { failures = 0 }
        acknowledged = offset
        if offset == length {
            // The IETF draft: all bytes arrived, but the upload is complete only once said so
            // (by `?1`, or by a success to a request that said `?1` and left the field out).
            guard configuration.uploadProtocol == .ietfDraft else { return finish(.completed) }
            if answer.complete == true || (answer.complete == nil && saysComplete(step)) { return finish(.completed) }
            // An empty completing append that did not complete it is a failure, not a loop.
            if case .append(_, 0) = step { return failed(jitter: jitter) }
            return append(from: offset)
        }
        return append(from: offset)
    }

    private mutating func append(from offset: Int64) -> Action {
        let count = Int(min(Int64(appendSize), length - offset))
        sentBound = max(sentBound, offset + Int64(count))
        return .request(.append(offset: offset, count: count))
    }

    private mutating func afterDiscovery(_ discovery: UploadDiscovery?) -> Action {
        discovered = true
        if configuration.uploadProtocol == .ietfDraft {
            guard let discovery, discovery.advertisesUploadLimit else { return creation() }
            serverResumes = true
            if let limit = discovery.maximumSize, length > limit { return finish(.failed(.tooLarge(length: length, limit: limit))) }
            if let most = discovery.maximumAppendSize, most > 0 { appendSize = Int(min(Int64(appendSize), most)) }
            return creation()
        }
        // An answer with no tus field at all (a proxy's answer to OPTIONS) is no discovery.
        if let discovery, !(discovery.versions.isEmpty && discovery.extensions.isEmpty) {
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
