import Foundation

/// Pause, resume, and automatic resume after a drop: continuing from the bytes held with
/// `Range` and `If-Range`, and reading the answer with ``ResumePolicy`` so that mismatched
/// bytes are never spliced. Network thread only, like the rest of `Connection`.
extension Connection {
    // MARK: - Pause and resume

    /// Pauses by taking the transfer off the multi handle (the bytes held stay where they
    /// are), or resumes by asking for the rest.
    ///
    /// - Parameter paused: Pause (true) or resume (false).
    /// - Parameter whenPaused: Runs on the callback queue once a pause has taken effect and
    ///   its resume data is saved.
    func setPaused(_ paused: Bool, whenPaused: (@Sendable () -> Void)? = nil) {
        guard !isFinished, paused != isPaused else { return }
        isPaused = paused
        if paused {
            if let transfer {
                NetworkThread.shared.multi.remove(transfer)
                self.transfer = nil
                interrupted = true
            }
            publishResumeData(saving: true)
            if let whenPaused {
                let callbackQueue = self.callbackQueue
                writerQueue.async { callbackQueue.async(execute: whenPaused) }
            }
        } else if !startPendingTransfer(), interrupted {
            interrupted = false
            continueDownload(automatic: false)
        }
    }

    /// Sends the current request again, for the bytes after those held.
    func continueDownload(automatic: Bool) {
        metrics.resumes += 1
        if automatic { metrics.automaticResumes += 1 }
        if metrics.firstResumeOffset == nil { metrics.firstResumeOffset = sink?.heldBytes }
        publishMetrics()
        send(request)
    }

    /// Adds `Range` and `If-Range` when bytes are held, and notes the offset asked for.
    func addRangeHeaders(to transfer: inout TransferRequest) {
        transfer.headers.removeAll { fieldNamesMatch($0.name, "Range") || fieldNamesMatch($0.name, "If-Range") }
        let held = sink?.heldBytes ?? 0
        guard held > 0 else {
            rangeSentFrom = nil
            return
        }
        transfer.headers.append(("Range", "bytes=\(held)-"))
        if let validator {
            transfer.headers.append(("If-Range", validator.headerValue))
        }
        // Ranges count the bytes as stored; a compressed answer would count other bytes.
        transfer.headers.removeAll { fieldNamesMatch($0.name, "Accept-Encoding") }
        transfer.headers.append(("Accept-Encoding", "identity"))
        rangeSentFrom = held
    }

    /// Reads the head of an answer to a range request. Returns false to abort the transfer
    /// before a byte of its body is written.
    func readRangeAnswer(_ head: ResponseHead) -> Bool {
        guard let held = rangeSentFrom else { return true }
        let decision = ResumePolicy.decide(status: head.statusCode, contentRange: head.value(of: "Content-Range"),
                                           held: held, knownLength: knownLength)
        switch decision {
        case .append(let completeLength):
            if case .entityTag(let expected)? = validator, let received = head.value(of: "ETag"), received != expected {
                return refuse(.validatorChanged(expected: expected, received: received), head)
            }
            knownLength = completeLength ?? knownLength
            expectedLength = knownLength ?? -1
        case .restartFromZero:
            do {
                try sink?.truncate()
            } catch {
                return refuse(.cannotRestartOutputStream, head)
            }
            metrics.restartsFromZero += 1
            metrics.bytesRefetched += held
            publishMetrics()
            rangeSentFrom = nil
            downloadProgress?.reset(total: 0, expected: -1)
        case .alreadyComplete:
            completeWithoutBody = true
            bodyAside = Data()
        case .refuse(let reason):
            return refuse(reason, head)
        case .notARangeAnswer:
            // A redirect is followed with the same range; any other answer (4xx, 5xx) is
            // reported with its body kept apart from the bytes held.
            if !RedirectPolicy.redirectStatusCodes.contains(head.statusCode) {
                bodyAside = Data()
            }
        }
        return true
    }

    private func refuse(_ reason: ResumeError.Reason, _ head: ResponseHead) -> Bool {
        abortReason = ResumeError(reason, response: head.httpURLResponse(for: request.url!))
        return false
    }

    /// A 200 names the version and length of what will now be held.
    func adoptIdentity(of head: ResponseHead, length: Int64?) {
        guard head.statusCode == 200 else { return }
        validator = ResumeValidator(etag: head.value(of: "ETag"), lastModified: head.value(of: "Last-Modified"))
        knownLength = length
        // Saved now, so that a process killed mid-body can still resume with the validator.
        publishResumeData(saving: true)
    }

    /// The response for a download a 416 found already complete: a 200 for the bytes held.
    func completedResponse() -> HTTPURLResponse {
        var fields = ["Content-Length": "\(sink?.heldBytes ?? 0)"]
        switch validator {
        case .entityTag(let tag)?: fields["ETag"] = tag
        case .lastModified(let date)?: fields["Last-Modified"] = date
        case nil: break
        }
        return HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!
    }

    // MARK: - Automatic resume

    /// Schedules a resume after a dropped connection, when the retry policy allows it.
    /// Returns false when the failure stands.
    func scheduleRetry(after failure: URLError) -> Bool {
        let policy = download.retryPolicy
        guard retries < policy.maximumRetries, RetryPolicy.isRetryable(failure), !isPaused else { return false }
        // Mid-body of a good answer, or while already retrying (the server may be restarting).
        let wasReceiving = head.map { $0.statusCode == 200 || $0.statusCode == 206 } ?? (retries > 0)
        let idempotent = RetryPolicy.idempotentMethods.contains((request.httpMethod ?? "GET").uppercased())
        guard wasReceiving, validator != nil || idempotent else { return false }
        retries += 1
        interrupted = true
        let delay = policy.delay(beforeRetry: retries)
        logger.debug("resuming after a drop", metadata: ["attempt": "\(retries)", "delay": "\(delay)", "error": "\(failure.code.rawValue)"])
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
            NetworkThread.shared.perform {
                guard !self.isFinished, self.interrupted, !self.isPaused else { return }
                self.interrupted = false
                self.continueDownload(automatic: true)
            }
        }
        return true
    }

    // MARK: - What the operation can see

    func publishMetrics() {
        let metrics = self.metrics
        operation.state.withLock { $0.downloadMetrics = metrics }
    }

    /// Publishes resume data for a download to a file, and saves it beside the file when
    /// `saving`, off this thread.
    func publishResumeData(saving: Bool) {
        publishMetrics()
        guard let sink, let destination = sink.destination, let url = request.url else { return }
        // The resume data is written after the bytes it counts (same serial queue). Should one
        // of those writes fail, the offset overstates the file; it is advisory, and a resume
        // continues from the file's real size.
        sink.flush()
        var headers = request.allHTTPHeaderFields ?? [:]
        headers = headers.filter { !ResumeData.excludedHeaders.contains($0.key.lowercased()) }
        let data = ResumeData(url: url, method: request.httpMethod ?? "GET", headers: headers, validator: validator,
                              offset: sink.heldBytes, expectedLength: knownLength, destination: destination)
        operation.state.withLock { $0.resumeData = data }
        guard saving, let encoded = try? data.encoded() else { return }
        let sidecar = ResumeData.sidecarURL(for: destination)
        writerQueue.async {
            try? encoded.write(to: sidecar, options: .atomic)
        }
    }

    /// What to do on the completion queue before the outcome is reported. A failure waits
    /// for its resume data to be on disk (a caller may exit as soon as it hears). A success
    /// checks the expected length and SHA-256, then removes the saved resume data.
    func completionCheck(succeeded: Bool) -> (@Sendable (Data?) -> (any Error)?)? {
        // Only downloads to a file have resume data on disk to wait for or remove.
        let writerQueue = sink?.destination == nil ? nil : self.writerQueue
        guard succeeded else {
            guard let writerQueue else { return nil }
            return { _ in
                writerQueue.sync {}
                return nil
            }
        }
        let check = IntegrityCheck(expectedSHA256: download.expectedSHA256, expectedLength: download.expectedLength,
                                   file: sink?.destination)
        let sidecar = sink?.destination.map(ResumeData.sidecarURL(for:))
        return { data in
            let failure = check.verify(memory: data)
            // Complete, or corrupt beyond what resuming could mend: either way the saved
            // resume data has served its purpose.
            if let sidecar, let writerQueue {
                writerQueue.sync { try? FileManager.default.removeItem(at: sidecar) }
            }
            return failure
        }
    }
}
