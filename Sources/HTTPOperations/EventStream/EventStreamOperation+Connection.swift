import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The stream's loop: one task that carries out ``EventStreamMachine``'s actions, one
/// connection at a time, so that the events of two connections can never interleave.
extension EventStreamOperation {
    /// Runs from `first`, the machine's answer to the start, until it finishes the operation.
    func run(from first: EventStreamMachine.Action) async {
        var parser = EventStreamParser(lastEventID: lastEventID, maximumEventBytes: configuration.maximumEventBytes)
        var action = first
        while true {
            switch action {
            case .connect:
                action = await connectOnce(&parser)
            case .wait(let delay):
                await waitOut(delay)
                action = state.withLock { $0.machine.waited() }
            case .awaitResume:
                await wakeup.wait(upTo: nil)
                action = state.withLock { $0.machine.waited() }
            case .finish(let end):
                conclude(end)
                return
            }
        }
    }

    /// Waits `delay`, or less when a pause, a resume or a cancel comes meanwhile.
    private func waitOut(_ delay: Duration) async {
        let interruptions = state.withLock { $0.machine.interruptions }
        await wakeup.sleep(for: delay) {
            state.withLock { $0.machine.interruptions != interruptions || $0.machine.phase != .waiting }
        }
    }

    /// Opens one connection, reads it to its end, and asks the machine what comes next.
    private func connectOnce(_ parser: inout EventStreamParser) async -> EventStreamMachine.Action {
        let connection = connectionOperation(for: requestForNextConnection())
        Self.prepare(connection)
        let body = ResponseBodyStream(connection)
        let opened = state.withLock { state -> Bool in
            guard state.machine.phase == .connecting else { return false }
            state.connection = connection
            state.connections += 1
            return true
        }
        guard opened else {
            connection.cancel()
            return state.withLock { $0.machine.connectionEnded(error: nil, jitter: 0) }
        }
        connection.start()
        var failure: (any Error)?
        do {
            guard let head = try await body.responseHead() else {
                throw URLError(.badServerResponse, url: request.url, description: "The answer had no HTTP head.")
            }
            let answer = state.withLock { $0.machine.answered(status: head.statusCode, mediaType: Self.mediaType(of: head)) }
            switch answer {
            case .read:
                // From the id the request named: the parser may have read past it before a pause.
                parser.beginStream(after: receivedLastEventID)
                for try await chunk in body {
                    let events = parser.parse(chunk)
                    let retry = parser.reconnectionTime
                    state.withLock { state in
                        if !chunk.isEmpty { state.machine.bodyReceived() }
                        if let retry { state.machine.retryReceived(milliseconds: retry) }
                    }
                    guard await deliver(events, then: parser.lastEventID) else { break }
                    if let failure = parser.failure { throw failure }
                }
            case .reconnect(let reasons):
                failure = refusal(reasons, head: head, of: connection)
            case .refuse(let reasons):
                close(connection)
                return .finish(.failed(refusal(reasons, head: head, of: connection)))
            case .stop(let action):
                close(connection)
                return action
            }
        } catch let error as EventStreamError {
            failure = EventStreamError(reason: error.reason, url: request.url, underlyingError: error.underlyingError)
        } catch {
            failure = error
        }
        close(connection)
        let jitter = Double.random(in: 0..<1)
        return state.withLock { $0.machine.connectionEnded(error: failure, jitter: jitter) }
    }

    /// What every connection of a stream needs, whoever made it: its body streamed to the
    /// loop, every status an answer (the machine judges it), no automatic resume (a `Range`
    /// means nothing to an event stream), no body limit and no total timeout (a stream has
    /// no end to reach in time; a manager's total timeout, meant for its ordinary requests,
    /// would cut every connection, and the request's idle timeout still finds a dead one).
    private static func prepare(_ connection: HTTPRequestOperation) {
        connection.retryPolicy = RetryPolicy(maximumRetries: 0)
        connection.maximumBodySize = nil
        if connection.configuration.totalTimeout != nil {
            var configuration = connection.configuration
            configuration.totalTimeout = nil
            connection.configuration = configuration
        }
        connection.setResponseSerializer(.data)
        connection.answerEveryStatus()
    }

    /// The error for an answer refused for `reasons`.
    private func refusal(_ reasons: [ResponseValidationError.Reason], head: ResponseHead,
                         of connection: HTTPRequestOperation) -> ResponseValidationError {
        ResponseValidationError(reasons: reasons, response: head.httpURLResponse(for: connection.currentRequest.url ?? request.url!),
                                data: nil)
    }

    /// ``request`` with `Last-Event-ID` (when an id is known), `Accept: text/event-stream`
    /// and `Cache-Control: no-cache` (unless the request sets its own).
    private func requestForNextConnection() -> URLRequest {
        var next = request
        let lastEventID = state.withLock { $0.receivedLastEventID }
        if !lastEventID.isEmpty { next.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID") }
        if next.value(forHTTPHeaderField: "Accept") == nil { next.setValue("text/event-stream", forHTTPHeaderField: "Accept") }
        if next.value(forHTTPHeaderField: "Cache-Control") == nil { next.setValue("no-cache", forHTTPHeaderField: "Cache-Control") }
        return next
    }

    private func close(_ connection: HTTPRequestOperation) {
        connection.cancel()
        state.withLock { $0.connection = nil }
    }

    /// Hands `events` over, in order, then moves the last event id to `streamID` (the parser's,
    /// which an event with no data may have moved); false when a pause or a cancel stopped it
    /// (the rest are not delivered to the handler, and the id stays at the last one delivered).
    ///
    /// To the handler, each event is delivered when the handler is called. To a sequence's
    /// channel, it is delivered when the loop takes it (``taken(_:)``); what waits in the
    /// buffer is received, and a reconnection does not ask for it again.
    private func deliver(_ events: [ServerSentEvent], then streamID: String) async -> Bool {
        let (delivery, queue) = state.withLock { ($0.delivery, $0.completionQueue) }
        switch delivery {
        case .handler(let handler)?:
            let delivered = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                (queue ?? .global()).async { [self] in
                    for event in events {
                        guard record(event) else { return continuation.resume(returning: false) }
                        handler(self, event)
                    }
                    continuation.resume(returning: true)
                }
            }
            guard delivered else { return false }
        case .channel(let channel)?:
            for event in events {
                guard await channel.push(.event(event)) else { return false }
            }
            if streamID != (events.last?.lastEventID ?? receivedLastEventID) {
                guard await channel.push(.lastEventID(streamID)) else { return false }
            }
        case nil:
            for event in events {
                guard record(event) else { return false }
            }
        }
        return state.withLock { state in
            guard !state.machine.isStopping else { return false }
            if case .channel? = state.delivery {
                state.receivedLastEventID = streamID
                return true
            }
            // Paused: the id stays at the last event delivered, which the resume asks after.
            guard !state.machine.holdsEvents else { return false }
            state.receivedLastEventID = streamID
            state.lastEventID = streamID
            return true
        }
    }

    private var receivedLastEventID: String { state.withLock { $0.receivedLastEventID } }

    /// Counts `event` as delivered to the handler, unless the operation is paused (the
    /// resumed connection asks for it again) or being cancelled.
    private func record(_ event: ServerSentEvent) -> Bool {
        state.withLock { state in
            guard !state.machine.holdsEvents else { return false }
            state.eventsDelivered += 1
            state.lastEventID = event.lastEventID
            state.receivedLastEventID = event.lastEventID
            return true
        }
    }

    /// The answer's media type, lowercased, without parameters.
    static func mediaType(of head: ResponseHead) -> String? {
        guard let value = head.value(of: "Content-Type") else { return nil }
        let type = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// Ends the operation with `end`, once.
    private func conclude(_ end: EventStreamMachine.End) {
        let error: (any Error)? = switch end {
        case .stoppedByServer: nil
        case .cancelled: cancellationError
        case .failed(let error): error
        }
        let channel = state.withLock { state -> EventChannel? in
            state.error = error
            state.connection = nil
            // The blocks may hold the operation or its manager: let go of them.
            state.makeConnection = nil
            defer { state.delivery = nil }
            if case .channel(let channel)? = state.delivery { return channel }
            return nil
        }
        let cancelled: Bool = if case .cancelled = end { true } else { false }
        channel?.finish(error, discardingWaiting: cancelled)
        announce(phaseKeys: state.withLock { $0.phase.move(to: .finished) })
    }
}
