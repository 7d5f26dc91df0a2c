import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every decision of an event stream, as a value: when to connect, whether an answer is a
/// stream to read, when and after how long to reconnect, when to give up. No I/O: its tests
/// feed events and check the actions (``EventStreamOperation`` carries them out).
///
/// A stream connects, reads while the answer is a `200` `text/event-stream`, and reconnects
/// after the connection ends, for whatever reason a reconnection can help with, after the
/// server's `retry` (or the configured delay), doubled for each connection in a row that read
/// none of an event stream's body, capped, with jitter. A `204` stops it (the standard's way for a server
/// to say "no more"); any other answer fails it, except 429, 502, 503 and 504, which a
/// server-side client meets during a deploy and reconnects after.
struct EventStreamMachine: Sendable, LoopMachine {
    /// Where the stream is.
    enum Phase: Sendable, Equatable {
        case ready, connecting, reading, waiting, paused, cancelling, finished
    }

    /// How the stream ended.
    enum End: Sendable {
        /// The server answered 204, or ended a stream that does not reconnect.
        case stoppedByServer
        case cancelled
        case failed(any Error)
    }

    /// What to do with a connection's answer.
    enum Answer: Sendable {
        /// It is an event stream: read its body.
        case read
        /// Drop it and report the connection ended with a ``ResponseValidationError`` for
        /// `reasons` (a status worth reconnecting after).
        case reconnect([ResponseValidationError.Reason])
        /// Drop it and fail the stream with a ``ResponseValidationError`` for `reasons`.
        case refuse([ResponseValidationError.Reason])
        /// Drop it and do `action` (the server's 204, or a pause or cancel that came first).
        case stop(Action)
    }

    /// What the operation does next.
    enum Action: Sendable {
        /// Opens a connection.
        case connect
        /// Waits, then reports ``EventStreamMachine/waited()``; a pause or cancel wakes it early.
        case wait(Duration)
        /// Waits until resumed or cancelled.
        case awaitResume
        case finish(End)
    }

    /// The statuses a reconnection may cure: too many requests, and a gateway's answers while
    /// the server behind it restarts.
    static let reconnectableStatuses: Set<Int> = [429, 502, 503, 504]

    let configuration: EventStreamConfiguration
    /// Whether the request may be sent again: a stream whose request is not idempotent (a
    /// POST, as model APIs stream their answers) never reconnects, unless the configuration
    /// allows it. Its end (a clean one) is then the end of the stream, and a drop its failure.
    let reconnects: Bool
    private(set) var phase = Phase.ready
    /// Connections in a row that ended before any of an event stream's body arrived.
    private(set) var consecutiveFailures = 0
    /// The server's last `retry`, in milliseconds.
    private(set) var serverRetry: Int?
    private var readOnThisConnection = false
    /// Counts the pauses, resumes and cancels that took effect: a wait that ends early with
    /// none of them since it began was woken by a stale wake, and goes on waiting.
    private(set) var interruptions = 0

    /// Cancelled or finished: nothing more is delivered.
    var isStopping: Bool { phase == .cancelling || phase == .finished }

    /// Whether events read ahead are held back from the handler: the stream is paused (the
    /// resumed connection asks for them again) or ending.
    var holdsEvents: Bool { isStopping || phase == .paused }

    /// A machine for a stream whose request uses `method`.
    init(configuration: EventStreamConfiguration, method: String = "GET") {
        self.configuration = configuration
        self.reconnects = TransferRequest.idempotentMethods.contains(method.uppercased())
            || configuration.reconnectsNonIdempotentRequests
    }

    /// The operation started.
    mutating func start() -> Action {
        guard phase == .ready else { return phase == .cancelling ? end(.cancelled) : .awaitResume }
        phase = .connecting
        return .connect
    }

    /// The connection's answer arrived: its status and its media type (lowercased, without
    /// parameters).
    mutating func answered(status: Int, mediaType: String?) -> Answer {
        guard phase == .connecting else { return .stop(interrupted()) }
        switch status {
        case 200 where mediaType == "text/event-stream":
            phase = .reading
            return .read
        case 204:
            return .stop(end(.stoppedByServer))
        case 200:
            phase = .finished
            return .refuse([.unacceptableContentType(mediaType, acceptable: ["text/event-stream"])])
        case let status where Self.reconnectableStatuses.contains(status) && reconnects:
            return .reconnect([.unacceptableStatusCode(status)])
        default:
            var reasons: [ResponseValidationError.Reason] = [.unacceptableStatusCode(status)]
            if mediaType != "text/event-stream" {
                reasons.append(.unacceptableContentType(mediaType, acceptable: ["text/event-stream"]))
            }
            phase = .finished
            return .refuse(reasons)
        }
    }

    /// The server sent a `retry` field.
    mutating func retryReceived(milliseconds: Int) {
        serverRetry = milliseconds
    }

    /// Some of the event stream's body arrived: the connection is healthy (an event, or a
    /// comment a server sends to keep it open), whatever comes after.
    mutating func bodyReceived() {
        readOnThisConnection = true
        consecutiveFailures = 0
    }

    /// The connection ended: cleanly (`error` nil), with a transport failure, or because the
    /// operation closed it. `jitter` is a number in 0..<1 (random in the operation).
    mutating func connectionEnded(error: (any Error)?, jitter: Double) -> Action {
        defer { readOnThisConnection = false }
        switch phase {
        case .paused: return .awaitResume
        case .cancelling: return end(.cancelled)
        case .finished: return .finish(.cancelled)
        case .ready, .waiting: return interrupted()
        case .connecting, .reading: break
        }
        guard reconnects else { return end(error.map { .failed($0) } ?? .stoppedByServer) }
        if let error, !RetryBackoff.isWorthRetrying(after: error) { return end(.failed(error)) }
        if !readOnThisConnection { consecutiveFailures += 1 }
        if let limit = configuration.maximumConsecutiveFailures, consecutiveFailures >= limit {
            return end(.failed(EventStreamError(reason: .reconnectsExhausted(attempts: consecutiveFailures), underlyingError: error)))
        }
        phase = .waiting
        return .wait(delay(jitter: jitter))
    }

    /// The wait is over (or was cut short by a pause, a resume or a cancel).
    mutating func waited() -> Action {
        switch phase {
        case .waiting:
            phase = .connecting
            return .connect
        case .paused: return .awaitResume
        case .cancelling: return end(.cancelled)
        case .finished: return .finish(.cancelled)
        case .ready, .connecting, .reading: return .awaitResume
        }
    }

    /// A pause: whether the operation must close its connection or cut its wait short. A
    /// stream that cannot reconnect cannot pause either (resuming would send it again).
    mutating func pause() -> Bool {
        guard reconnects else { return false }
        switch phase {
        case .connecting, .reading, .waiting:
            phase = .paused
            interruptions += 1
            return true
        case .ready, .paused, .cancelling, .finished:
            return false
        }
    }

    /// A resume: whether the waiting operation must be woken (it then reconnects at once).
    mutating func resume() -> Bool {
        guard phase == .paused else { return false }
        phase = .waiting
        interruptions += 1
        return true
    }

    /// A cancel: whether the operation must close its connection or cut its wait short.
    mutating func cancel() -> Bool {
        switch phase {
        case .ready:
            phase = .cancelling
            return false
        case .connecting, .reading, .waiting, .paused:
            phase = .cancelling
            interruptions += 1
            return true
        case .cancelling, .finished:
            return false
        }
    }

    /// The wait before the next connection: the server's `retry` (or the configured delay),
    /// doubled for each failure in a row after the first, capped, then stretched by up to
    /// `jitter` of itself, never above the cap (so never below what the server asked, unless
    /// it asked for more than the cap).
    ///
    /// The server's `retry` is the wait after a connection that ended; from the second failure
    /// in a row the doubling starts from at least `reconnectionDelay`, so that a `retry: 0`
    /// cannot make connections to a server that is down a tight loop.
    func delay(jitter: Double) -> Duration {
        let asked = serverRetry.map { Duration.milliseconds($0) } ?? configuration.reconnectionDelay
        let base = consecutiveFailures > 1 ? max(asked, configuration.reconnectionDelay) : asked
        return RetryBackoff.delay(base: base, cap: configuration.maximumReconnectionDelay, failures: consecutiveFailures,
                                  jitter: configuration.jitter, draw: jitter)
    }

    private mutating func end(_ end: End) -> Action {
        phase = .finished
        return .finish(end)
    }

    /// An event that came after the operation had moved on (a pause, a resume or a cancel
    /// raced it).
    private mutating func interrupted() -> Action {
        switch phase {
        case .cancelling: return end(.cancelled)
        case .finished: return .finish(.cancelled)
        case .waiting:
            // Paused and resumed meanwhile: the resume asks for a connection at once.
            phase = .connecting
            return .connect
        case .ready, .connecting, .reading, .paused: return .awaitResume
        }
    }
}
