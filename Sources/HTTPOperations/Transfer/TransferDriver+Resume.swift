import Foundation

/// Pause, resume, automatic resume after a drop, and resume data: ``TransferStateMachine``
/// decides (and reads range answers with ``ResumePolicy`` so that mismatched bytes are never
/// spliced); this performs. Network thread only, like the rest of `TransferDriver`.
extension TransferDriver {
    // MARK: - Pause and resume

    /// Performs a pause the machine took (in the caller's thread, see
    /// ``URLConnectionOperation/pause(completion:)``): the transfer is taken off the multi
    /// handle when the machine says so (the bytes held stay where they are; what the old
    /// transfer delivered after the pause the machine refused), and resume data is saved.
    ///
    /// - Parameter whenPaused: Run on the callback queue once the resume data is saved.
    func paused(stoppingTransfer: Bool, whenPaused: [@Sendable () -> Void]) {
        assertOnNetworkThread()
        if stoppingTransfer { stopTransfer() }
        publishResumeData(saving: true)
        callBack(whenPaused)
    }

    /// Runs `completions` of `pause(completion:)` on the callback queue, in order — after the
    /// resume data saved so far is on disk.
    func callBack(_ completions: [@Sendable () -> Void]) {
        let whenPaused = completions
        guard !whenPaused.isEmpty else { return }
        let callbackQueue = self.callbackQueue
        let group = completionGroup
        let callBack: @Sendable () -> Void = { for completion in whenPaused { callbackQueue.async(group: group, execute: completion) } }
        if sink?.destination != nil {
            // After the resume data is on disk: it is written on the same serial queue.
            writerQueue.async(execute: callBack)
        } else {
            callBack()
        }
    }

    /// Performs a resume the machine answered with a request: the bytes after those held,
    /// the request a block decided on, or the first one.
    func start(resumed send: TransferStateMachine.Send, attempt: Int) {
        assertOnNetworkThread()
        start(send, attempt: attempt, prepared: send.reason == .first ? takeFirstTransfer() : nil)
    }

    /// Performs a resume the machine refused (the request must not be sent again): the
    /// machine has finished, only the report is left.
    func resumeFailed(_ failure: TransferStateMachine.Failure) {
        assertOnNetworkThread()
        stopTransfer()
        finish(response: nil, error: error(for: failure))
    }

    // MARK: - Automatic resume

    /// Waits `delay`, then tells the machine the retry timer fired.
    func scheduleRetry(after delay: TimeInterval, failure: CurlError?) {
        log("retry", [RequestLogging.retriesKey: "\(withMachine { $0.retries })", "httpop.delay": "\(delay)",
                                                         "error": "\(failure.map { "\($0)" } ?? "")"])
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
            NetworkThread.shared.perform {
                guard let (send, attempt) = self.withMachine({ machine in
                    machine.retryTimerFired().map { ($0, machine.attempt.number) }
                }) else { return }
                self.start(send, attempt: attempt)
            }
        }
    }

    // MARK: - What the operation can see

    /// Publishes resume data for a download to a file (the operation's ``URLConnectionOperation/resumeData``),
    /// and saves it beside the file when `saving`.
    ///
    /// Both happen on the writer queue, after the writes and the emptying handed in before:
    /// the offset is what the file really holds then, and the version is the machine's only
    /// if every emptying asked for before has happened. When one failed (the file still holds
    /// the old version's bytes), nothing is published: the resume data already published and
    /// saved names the version the file holds.
    ///
    /// The URL and header fields are the first request's, before any redirect: a saved
    /// download continues from the URL the caller asked for.
    func publishResumeData(saving: Bool) {
        guard let sink, let destination = sink.destination, let url = originalRequest.url else { return }
        let (sendsOwnRange, validator, entityTag, lastModified, length) = withMachine { machine in
            (machine.configuration.sendsOwnRange, machine.held.validator, machine.held.entityTag, machine.held.lastModified,
             machine.held.knownLength)
        }
        // A byte-range request of the caller's own holds bytes from its own offset: resume
        // data (a Range from the bytes held, without the caller's) would splice the resource
        // after them. Asking again starts that range over instead.
        guard !sendsOwnRange else { return }
        // Secrets stay out of the file: credential fields (ResumeData drops them) and the
        // fields the caller named sensitive.
        let headers = (originalRequest.allHTTPHeaderFields ?? [:]).filter { !sensitiveHeaderFields.contains($0.key.lowercased()) }
        let method = originalRequest.httpMethod ?? "GET"
        let (operation, sidecar) = (self.operation, ResumeData.sidecarURL(for: destination))
        sink.afterWrites { written in
            guard written.holdsCurrentVersion else { return }
            var data = ResumeData(url: url, method: method, headers: headers, validator: validator,
                                  offset: written.bytes, expectedLength: length, destination: destination)
            (data.entityTag, data.lastModified) = (entityTag, lastModified)
            operation.downloadWritten(data)
            guard saving else { return }
            // No bytes and no version (an error answer to a first request, or a file emptied
            // for a version with no validator): nothing to resume from. A sidecar left from
            // before would name bytes the file no longer holds, so it goes.
            guard written.bytes > 0 || validator != nil else {
                try? FileManager.default.removeItem(at: sidecar)
                return
            }
            guard let encoded = try? data.encoded() else { return }
            try? PrivateFile.write(encoded, to: sidecar)
        }
    }

    /// The response for a download a 416 found already complete: a 200 for the bytes held,
    /// with the `Content-Type` of the answer that began them when this operation saw it (a
    /// serializer judges the body by it).
    func completedResponse() -> HTTPURLResponse {
        let (held, validator) = withMachine { ($0.held.count, $0.held.validator) }
        var fields = ["Content-Length": "\(held)"]
        if let type = operation.responseHeadValue(of: "Content-Type") {
            fields["Content-Type"] = type
        }
        switch validator {
        case .entityTag(let tag)?: fields["ETag"] = tag
        case .lastModified(let date)?: fields["Last-Modified"] = date
        case nil: break
        }
        return HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!
    }

    /// What to do on the completion queue before the outcome is reported. An incomplete
    /// download (a failure, or an error answer to a resume) waits for its resume data to be
    /// on disk (a caller may exit as soon as it hears), and keeps it. A complete one checks
    /// the expected length and SHA-256, then removes the saved resume data.
    func completionCheck(complete: Bool) -> (@Sendable (Data?) -> (any Error)?)? {
        // Only downloads to a file have resume data on disk to wait for or remove.
        let writerQueue = sink?.destination == nil ? nil : self.writerQueue
        guard complete else {
            guard let writerQueue else { return nil }
            return { _ in
                writerQueue.sync {}
                return nil
            }
        }
        // Nothing expected and no file: nothing to run on the callback queue (most requests).
        guard download.expectedSHA256 != nil || download.expectedLength != nil || writerQueue != nil else { return nil }
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
