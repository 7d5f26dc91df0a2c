import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The upload's loop: one task that carries out ``UploadMachine``'s actions, one request at a
/// time, reading each request's bytes from the source just before it goes.
extension ResumableUploadOperation {
    /// What one request's outcome says, read on the thread that announced it.
    private struct Reply: Sendable {
        var status: Int?
        /// Header fields by lowercased name.
        var fields: [String: String] = [:]
        var url: URL?
        var failed = false
        var curable = false

        func value(_ name: String) -> String? { fields[name.lowercased()] }
    }

    /// Runs from `first`, the machine's answer to the start, until it finishes the operation.
    func run(from first: UploadMachine.Action) async {
        var action = first
        let reader: UploadReader
        do {
            let measured = try await measuredSource()
            reader = UploadReader(source: source, identity: measured?.0, stamp: measured?.1)
        } catch {
            reader = UploadReader(source: source, identity: nil, stamp: nil)
            action = abandon(after: error)
        }
        while true {
            switch action {
            case .request(let step):
                action = await perform(step, reader: reader)
            case .wait(let delay):
                // A pause or cancel that came before this point left the machine out of
                // `.waiting` (its wake may already be spent): the phase tells.
                let interruptions = state.withLock { $0.machine.interruptions }
                await wakeup.sleep(for: delay) {
                    state.withLock { $0.machine.interruptions != interruptions || $0.machine.phase != .waiting }
                }
                action = state.withLock { $0.machine.waited() }
            case .awaitResume:
                await wakeup.wait(upTo: nil)
                action = state.withLock { $0.machine.waited() }
            case .finish(let end):
                return conclude(end)
            }
        }
    }

    /// The file's identity, measured off the network thread and the task pool (hashing a large
    /// file takes a while), and checked against the resume data's; nil for other sources.
    private func measuredSource() async throws -> (UploadFileIdentity, FileStamp)? {
        guard let url = source.fileURL else { return nil }
        // A cancel stops the hashing between two pieces.
        let stopped: @Sendable () -> Bool = { [self] in state.withLock { $0.machine.isStopping } }
        let (identity, stamp) = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(UploadFileIdentity, FileStamp), any Error>) in
            DispatchQueue.global(qos: .utility).async {
                continuation.resume(with: Result { try UploadFileIdentity.measure(url, stoppingWhen: stopped) })
            }
        }
        // The length was declared from the file's size when the operation was made (or when
        // the upload began, for resume data): a file that is not that file any more is refused.
        // The content decides: a file touched (a new modification time) but not changed goes on.
        if let startedFrom, identity.size != startedFrom.file.size || identity.sha256 != startedFrom.file.sha256 {
            throw UploadError(reason: .fileChanged(path: url.path), url: startedFrom.uploadURL)
        }
        if identity.size != totalBytes { throw UploadError(reason: .fileChanged(path: url.path), url: request.url) }
        state.withLock { $0.identity = identity }
        return (identity, stamp)
    }

    /// Sends `step`'s request and asks the machine what comes next.
    private func perform(_ step: UploadMachine.Step, reader: UploadReader) async -> UploadMachine.Action {
        let (offset, count): (Int64, Int) = switch step {
        case .create(let count): (0, count)
        case .append(let offset, let count): (offset, count)
        case .discover, .queryOffset, .terminate: (0, 0)
        }
        var bytes: Data?
        var streamed: StreamedRequestBody?
        if count > max(1, configuration.chunkSize) {
            // The draft's creation of a server not known to resume carries the whole upload:
            // written in chunk-sized pieces as curl takes them, so memory stays flat.
            streamed = Self.streamedBody(from: reader, count: count, piece: max(1, configuration.chunkSize))
        } else if count > 0 {
            do {
                bytes = try await reader.bytes(from: offset, count: count)
            } catch {
                return abandon(after: error)
            }
        }
        // Saved before the bytes go: a crash from here on leaves resume data whose sent offset
        // covers them.
        saveResumeData()
        let (uploadURL, checksum) = state.withLock { ($0.machine.uploadURL, $0.machine.checksumAlgorithm) }
        var request = dialect.request(for: step, uploadURL: uploadURL, bytes: bytes, checksum: checksum)
        if let streamed {
            request.httpBody = nil
            request.httpBodyStream = streamed
        }
        var connection = connectionOperation(for: request)
        // On another origin, the fields the connection's configuration names secret stay
        // behind too (an API key), as a redirect's would.
        let secret = connection.configuration.sensitiveHeaderFields
        if !secret.isEmpty, dialect.leavesOrigin(request.url) {
            var kept = request
            UploadDialect.removeFields(secret, from: &kept)
            // Compared by count: `URLRequest`'s `==` does not see its header fields here.
            if kept.allHTTPHeaderFields?.count != request.allHTTPHeaderFields?.count { connection = connectionOperation(for: kept) }
        }
        prepare(connection, for: step, sendingFrom: offset)
        let opened = state.withLock { state -> Int? in
            let mayGo = state.machine.phase == .running || (step == .terminate && state.machine.phase == .cancelling)
            guard mayGo else { return nil }
            state.connection = connection
            state.requests += 1
            return state.machine.interruptions
        }
        guard let sentAt = opened else {
            // Paused, resumed or cancelled while the bytes were read: nothing was sent.
            connection.cancel()
            return state.withLock { $0.machine.waited() }
        }
        let reply = await withCheckedContinuation { (continuation: CheckedContinuation<Reply, Never>) in
            connection.whenOutcomeKnown { [self] finished in
                continuation.resume(returning: readReply(of: finished))
            }
            connection.start()
        }
        let answer = reply.failed ? UploadMachine.Answer(failedTransiently: reply.curable, failedForGood: !reply.curable)
                                  : dialect.answer(for: step, status: reply.status ?? 0, requestURL: reply.url ?? request.url,
                                                   value: reply.value)
        let expires = reply.value("Upload-Expires").flatMap { HTTPDate.parse($0) }
        let jitter = Double.random(in: 0..<1)
        let (next, progressed) = state.withLock { state -> (UploadMachine.Action, Bool) in
            state.connection = nil
            if let expires { state.expires = expires }
            let before = state.machine.acknowledged
            let next = state.machine.answered(step, answer, jitter: jitter, interruptedSince: sentAt)
            return (next, state.machine.acknowledged != before)
        }
        if progressed { reportProgress(acknowledgedOffset) }
        return next
    }

    /// Reads `finished`'s outcome; keeps its error (or, for a status the protocol does not
    /// take, a ``ResponseValidationError``) as the last failure.
    private func readReply(of finished: URLConnectionOperation) -> Reply {
        // A status the response serializer does not accept is still an answer here: the
        // machine reads every status.
        let refusal = finished.error as? ResponseValidationError
        let response = refusal?.response ?? finished.response as? HTTPURLResponse
        var reply = Reply(status: response?.statusCode, url: response?.url)
        if let error = finished.error, refusal == nil {
            reply.failed = true
            reply.curable = RetryBackoff.isWorthRetrying(after: error)
            state.withLock { $0.lastFailure = error }
            return reply
        }
        for (name, value) in response?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { reply.fields[name.lowercased()] = value }
        }
        if let response, !(200..<300).contains(response.statusCode) {
            let failure = refusal ?? ResponseValidationError(reasons: [.unacceptableStatusCode(response.statusCode)], response: response,
                                                             data: (finished as? HTTPRequestOperation)?.responseData)
            state.withLock { $0.lastFailure = failure }
        }
        return reply
    }

    /// What every request of an upload needs, whoever made it: every status an answer (the
    /// machine judges it), no retries of its own (the machine retries, from the server's
    /// offset), a small answer body, progress told from `base` on, and for the IETF draft's
    /// creation, the upload's URL from its 104 interim answer.
    private func prepare(_ connection: HTTPRequestOperation, for step: UploadMachine.Step, sendingFrom base: Int64) {
        connection.retryPolicy = RetryPolicy(maximumRetries: 0)
        connection.maximumBodySize = 1 << 20
        connection.setResponseSerializer(.data)
        connection.answerEveryStatus()
        let (handler, queue) = state.withLock { ($0.progressHandler, $0.completionQueue) }
        if let handler, step.carriesBytes {
            let total = totalBytes
            connection.setUploadProgressBlock { [self] _, sent, _ in
                (queue ?? .global()).async { handler(self, base + sent, total) }
            }
        }
        if configuration.uploadProtocol == .ietfDraft, case .create = step {
            connection.setInformationalResponseBlock { [self] _, interim in
                guard interim.statusCode == 104,
                      interim.value(forHTTPHeaderField: "Upload-Draft-Interop-Version") == UploadDialect.ietfInteropVersion,
                      let location = interim.value(forHTTPHeaderField: "Location"),
                      let url = URL(string: location, relativeTo: request.url),
                      !UploadDialect.downgrades(from: request.url, to: url.absoluteURL) else { return }
                state.withLock { $0.machine.learnedLocation(url.absoluteURL) }
                // Saved at once: a crash during a creation that carries the whole upload can go
                // on from it. (The loop waits for this request meanwhile: never two at once.)
                saveResumeData()
            }
        }
    }

    /// A body of `count` bytes from the source's start, read `piece` bytes at a time as the
    /// transfer takes them (sent again from the start if a redirect asks).
    private static func streamedBody(from reader: UploadReader, count: Int, piece: Int) -> StreamedRequestBody {
        StreamedRequestBody(length: Int64(count)) { writer in
            var offset: Int64 = 0
            while offset < Int64(count) {
                let next = Int(min(Int64(piece), Int64(count) - offset))
                try await writer.write(try await reader.bytes(from: offset, count: next))
                offset += Int64(next)
            }
        }
    }

    /// Hands the resume data to its handler when it changed since the last time.
    private func saveResumeData() {
        let changed = state.withLock { state -> (UploadResumeData, ResumeDataHandler)? in
            guard let handler = state.resumeDataHandler, let data = resumeData(of: state), data != state.savedResumeData else { return nil }
            state.savedResumeData = data
            return (data, handler)
        }
        if let (data, handler) = changed { handler(data) }
    }

    private func reportProgress(_ sent: Int64) {
        let (handler, queue) = state.withLock { ($0.progressHandler, $0.completionQueue) }
        guard let handler else { return }
        let total = totalBytes
        (queue ?? .global()).async { handler(self, sent, total) }
    }

    /// What follows a failure to read the source (a changed file, a stream that ran dry, an
    /// I/O error): the end, with that error. A cancel that stopped the reading (a stream's
    /// wait, a file's hashing) goes on as any cancel does (deleting the upload when asked).
    private func abandon(after error: any Error) -> UploadMachine.Action {
        state.withLock { state in
            if state.machine.phase == .cancelling { return state.machine.waited() }
            state.machine.abandon()
            if let error = error as? UploadError {
                state.lastFailure = UploadError(reason: error.reason, url: state.machine.uploadURL ?? request.url,
                                                underlyingError: error.underlyingError)
            } else {
                state.lastFailure = error
            }
            return .finish(.transportFailed)
        }
    }

    /// Ends the operation with `end`, once.
    private func conclude(_ end: UploadMachine.End) {
        saveResumeData()
        let (finished, observers) = state.withLock { state -> ([String], [@Sendable () -> Void]) in
            let url = state.machine.uploadURL ?? request.url
            switch end {
            case .completed:
                state.completed = true
            case .cancelled:
                state.error = cancellationError
            case .failed(let reason):
                state.error = UploadError(reason: reason, url: url)
            case .retriesExhausted(let attempts):
                state.error = UploadError(reason: .retriesExhausted(attempts: attempts), url: url, underlyingError: state.lastFailure)
            case .refused, .transportFailed:
                state.error = state.lastFailure ?? URLError(.badServerResponse, url: url, description: "The upload failed.")
            }
            state.connection = nil
            state.loop = nil
            // The blocks may hold the operation or its manager: let go of them.
            state.makeConnection = nil
            state.resumeDataHandler = nil
            defer { state.finishObservers = [] }
            return (state.phase.move(to: .finished), state.finishObservers)
        }
        state.withLock { $0.progressHandler = nil }
        announce(phaseKeys: finished)
        observers.forEach { $0() }
    }
}
