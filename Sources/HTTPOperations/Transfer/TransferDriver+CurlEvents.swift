import Foundation
import Logging

/// What curl reports of a transfer (``CurlTransferDelegate``): its head, its body, the request
/// bytes it sent, its end. Network thread only: each entry asserts it.
extension TransferDriver {
    func transfer(_ transfer: CurlTransfer, didReceive head: ResponseHead) -> Bool {
        assertOnNetworkThread()
        guard transfer === self.transfer else {
            transfer.refusal = "a head for a transfer replaced"
            return false
        }
        #if DEBUG
        reach(.headArriving)
        #endif
        let (attempt, writeError) = (transferAttempt, sink?.writeError)
        typealias Reading = (current: Bool, action: TransferStateMachine.HeadAction, rangeFrom: Int64?,
                             expectedLength: Int64, bodyLimit: Int64?)
        let (current, action, rangeFrom, expectedLength, bodyLimit) = withMachine { machine -> Reading in
            guard machine.attempt.number == attempt else {
                transfer.refusal = "a head for attempt \(attempt); the machine is at \(machine.refusalState)"
                return (false, .abort, nil, -1, nil)
            }
            if let writeError {
                // A write already failed (its event is on its way): nothing of this answer can
                // be kept, and a restart from zero would empty nothing. The transfer is aborted
                // and its completion reports the failure: this is inside curl's callback, where
                // it cannot be stopped (stopping a transfer from its own callback crashes curl).
                machine.writerFailedBeforeHead(writeError)
                transfer.refusal = "a head after a write failed; the machine is at \(machine.refusalState)"
                return (false, .abort, nil, -1, nil)
            }
            let action = machine.headReceived(head)
            if action == .abort { transfer.refusal = "a head; the machine is at \(machine.refusalState)" }
            return (true, action, machine.attempt.rangeFrom, machine.held.expectedLength, machine.configuration.maximumBodySize)
        }
        if current {
            self.head = head
            bodyAside = Data()
        }
        switch action {
        case .deliver(let restartFromZero, let newIdentity):
            if restartFromZero {
                // The machine allows it only for sinks that can restart.
                try? sink?.truncate()
                downloadProgress?.reset(total: 0, expected: -1)
            }
            if rangeFrom == nil {
                sink?.reserve(expectedLength, limit: bodyLimit ?? 1 << 30)
            }
            if newIdentity {
                // Saved now, so that a process killed mid-body can still resume with the validator.
                publishResumeData(saving: true)
            }
            // The HTTPURLResponse is built later, when someone asks, off this thread. The
            // response is the head that began the body, not the 206 of a continuation after a
            // pause or a drop: its status and length describe the whole body the caller gets.
            if rangeFrom == nil || !headDelivered {
                operation.setResponseHead(head, url: request.url!)
            }
            headDelivered = true
            bodyChannel?.headArrived(head)
            return true
        case .holdAside:
            return true
        case .abort:
            return false
        }
    }

    func transfer(_ transfer: CurlTransfer, didReceiveBody bytes: UnsafeRawBufferPointer) -> BodyDisposition {
        assertOnNetworkThread()
        guard transfer === self.transfer, let sink else {
            transfer.refusal = "a body chunk for a transfer replaced"
            return .abort
        }
        let attempt = transferAttempt
        let (action, expectedLength) = withMachine { machine in
            guard machine.attempt.number == attempt else {
                transfer.refusal = "a body chunk for attempt \(attempt); the machine is at \(machine.refusalState)"
                return (TransferStateMachine.BodyAction.abort, Int64(-1))
            }
            let action = machine.bodyReceived(count: bytes.count, admission: { sink.admit(bytes.count) })
            if action == .abort { transfer.refusal = "a body chunk; the machine is at \(machine.refusalState)" }
            return (action, machine.held.expectedLength)
        }
        switch action {
        case .append:
            sink.write(bytes)
            downloadProgress?.record(Int64(bytes.count), expected: expectedLength)
            return .taken
        case .divert:
            bodyAside.append(contentsOf: bytes)
            return .taken
        case .discard:
            return .taken
        case .wait:
            // The writer is behind: curl keeps these bytes and stops reading the socket.
            return .later
        case .abort:
            return .abort
        }
    }

    /// Writing the body failed: the download ends with that failure, whatever it was doing.
    func writerFailed(_ error: URLError) {
        assertOnNetworkThread()
        guard let outcome = withMachine({ $0.writerFailed(error) }) else { return }
        stopTransfer()
        report(outcome, of: nil)
    }

    /// The writer made room: a consumer gets the bytes that waited for it, and the transfer
    /// that waited for room goes on, if it still runs.
    func writerHasRoom() {
        assertOnNetworkThread()
        sink?.handOverIfIdle()
        let attempt = transferAttempt
        guard withMachine({ $0.attempt.number == attempt && $0.writerCaughtUp() }), let transfer else { return }
        NetworkThread.shared.multi.unpause(transfer)
    }

    func transfer(_ transfer: CurlTransfer, didSendBodyBytes count: Int) {
        assertOnNetworkThread()
        uploadProgress?.record(Int64(count), expected: transfer.request.body.length ?? -1)
    }

    func transfer(_ transfer: CurlTransfer, didCompleteWith error: CurlError?) {
        assertOnNetworkThread()
        guard transfer === self.transfer else { return }
        self.transfer = nil
        record(transfer.timings)
        // A transfer the caller's pause left behind (a resume has moved the machine on): its
        // end is nobody's outcome; the job that would have stopped it finds nothing to stop.
        // The attempt is checked in the same lock as the machine hears the end, each time: a
        // caller's resume may move the machine to its next attempt between two locks, and
        // this end would then be judged as the new attempt's.
        let attempt = transferAttempt
        if let refusal = transfer.trustFailure {
            // The pins said no before anything was sent: final, never retried.
            return fail(refusal, attempt: attempt)
        }
        if transfer.refusedResend {
            // curl would have sent a request that is not idempotent again: never retried.
            return fail(TransferError(.connectionClosedBeforeAnswer, url: request.url,
                                      detail: "The connection closed after the \(request.httpMethod ?? "POST") request was sent "
                                          + "and before any answer; it was not sent again, since the server may have acted on it"),
                        attempt: attempt)
        }
        if let trust = transfer.pendingServerTrust {
            // Stopped before sending to a server the block has not judged.
            switch withMachine({ $0.attempt.number == attempt ? $0.serverTrustQuestioned() : .ignored }) {
            case .ask: askServerTrust(trust)
            case .ignored: break
            case .report(let outcome): report(outcome, of: nil)
            }
            return
        }
        // A body that could not be read is the real failure; curl only saw its callback abort.
        // Without an error too: a written body whose writer failed (threw, or wrote past its
        // declared length) after curl had taken every declared byte is no success.
        let failure = error.map { transfer.bodyReadFailure ?? URLError($0, url: request.url) } ?? transfer.bodyReadFailure
        #if DEBUG
        reach(.completing)
        #endif
        let (action, held, next) = withMachine { machine in
            guard machine.attempt.number == attempt else { return (TransferStateMachine.CompletionAction.ignored, Int64(0), 0) }
            return (machine.transferCompleted(error: failure), machine.held.count, machine.attempt.number)
        }
        switch action {
        case .ignored:
            break
        case .report(let outcome):
            report(outcome, of: transfer)
        case .scheduleRetry(let delay):
            scheduleRetry(after: delay, failure: error)
        case .send(let send):
            log("continue", ["httpop.offset": "\(held)"])
            start(send, attempt: next)
        case .redirect:
            redirect(to: transfer.redirectURL)
        case .challenge(let previousFailureCount):
            challenge(previousFailureCount: previousFailureCount)
        }
    }

    /// Logs `message` at debug with `metadata` — on the callback queue, never here: a log
    /// handler is the caller's code. Nothing is built when the logger is silent.
    func log(_ message: String, _ metadata: @autoclosure () -> Logger.Metadata) {
        guard logger.logLevel <= .debug else { return }
        let (logger, metadata) = (self.logger, metadata())
        callbackQueue.async(group: completionGroup) { logger.debug("\(message)", metadata: metadata) }
    }

    /// Adds a finished transfer's times to the operation's.
    func record(_ last: TransferTimings.Transfer?) {
        guard let last else { return }
        if timings == nil {
            timings = TransferTimings(lastTransfer: last)
        } else {
            timings!.append(last)
        }
    }
}
