import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tracing

/// What the rest of the library tells an operation, and asks it, by name.
///
/// The operation's state is its own: only the files of `Operation/` open its lock. The client
/// that makes it, the driver of its transfer and its body stream speak to it through these
/// events (the `Layers` test holds every other folder to that), so each change of its state
/// has one place that makes it and says what it means.
extension URLConnectionOperation {
    // MARK: - From its client (before it starts)

    /// Takes the settings of the client that made it: the client's shared copy when nobody
    /// changed this operation's, otherwise the client's configuration over its own (it keeps
    /// its body's destination, redirects and blocks). `tracer`, when the client set one
    /// (nil inside: trace nothing), replaces the one current where the operation was made.
    func adoptClientSettings(_ shared: SharedSettings, tracer: (any Tracer)??) {
        state.withLock { state in
            if let tracer { state.tracer = tracer }
            if state.sharedSettings.isDefaults {
                state.sharedSettings = shared
            } else {
                state.settings.configuration = shared.value.configuration
                state.settings.serverTrustEvaluation = shared.value.serverTrustEvaluation
            }
        }
    }

    /// Takes every status as an answer, not as an error to fail with (the HTTPTypes door).
    /// In the state, not the settings: those stay shared with the client's other operations.
    func answerEveryStatus() {
        state.withLock { $0.everyStatusIsAnAnswer = true }
    }

    /// Sends the response's body to `channel` instead of memory, a file or an output stream.
    func streamBody(to channel: ResponseBodyChannel) {
        state.withLock { state in
            state.settings.bodyChannel = channel
            state.settings.download.destination = nil
            state.settings.outputStream = Handover(nil)
        }
    }

    // MARK: - From its transfer (the network thread, or its writer's queue)

    /// Runs `event` on the transfer's machine, under the operation's lock: every event and
    /// every read of the transfer's state goes through here. None of them changes the
    /// operation's phase (an outcome during a pause leaves it paused until delivered; see
    /// ``TransferStateMachine/endedPaused``), so nothing is announced from the network
    /// thread: Foundation's observers and the metrics backend are callers' code.
    @discardableResult
    func withMachine<Result: Sendable>(_ event: (inout TransferStateMachine) -> Result) -> Result {
        state.withLock { state in
            let before = state.phase
            defer { assert(state.phase == before, "a transfer event changed the phase from \(before)") }
            return event(&state.machine)
        }
    }

    /// The transfer sends `request` now (a redirect, a retry, a resume): it is the
    /// operation's ``currentRequest``.
    func transferSends(_ request: URLRequest) {
        state.withLock { $0.currentRequest = request }
    }

    /// The download's file now holds what `data` says: it is the operation's ``resumeData``.
    /// Called on the writer's queue, after the writes before it.
    func downloadWritten(_ data: ResumeData) {
        state.withLock { $0.resumeData = data }
    }

    /// The value of `field` in the head of the final response, when one arrived.
    func responseHeadValue(of field: String) -> String? {
        state.withLock { $0.responseHead?.head.value(of: field) }
    }

    /// The trailer fields after the final response's body, when it had any.
    var receivedTrailers: ResponseHead? {
        state.withLock { $0.responseTrailers }
    }
}
