import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// An `Operation` that reads a Server-Sent Events stream (`text/event-stream`) and reconnects
/// where it left off: after a dropped connection, a clean end, a gateway's 502/503/504, a
/// pause, or a process restart (``init(request:lastEventID:configuration:)``).
///
/// Each connection is an ``HTTPRequestOperation`` (made by
/// ``connectionOperation(for:)``), started by this operation, not put on a queue: the stream
/// holds one place on its own queue however often it reconnects. A reconnection sends the last
/// event id received as `Last-Event-ID` and waits the server's `retry` (see
/// ``EventStreamConfiguration``). Events are handed to the event handler in the order the
/// server sent them, each exactly once: an event the connection's end cut off is never
/// delivered, and its `id` is never sent (the server sends it again). The next bytes are not
/// read until the handler has returned: a slow handler slows the stream (libcurl pauses the
/// transfer), it never makes it hold more.
///
/// It finishes when the server answers 204 (``error`` nil), when it is cancelled
/// (`URLError(.cancelled)`), or with the error that stopped it: a ``ResponseValidationError``
/// for an answer that is not an event stream, an ``EventStreamError``, or the `URLError` or
/// ``SecurityError`` a reconnection cannot cure.
///
/// ```swift
/// let stream = manager.eventStreamOperation(with: request) { operation, event in
///     print(event.event, event.data)
/// }
/// manager.operationQueue.addOperation(stream)
/// ```
///
/// ## Subclassing notes
///
/// - Override ``connectionOperation(for:)`` to change each connection's request or settings
///   (a fresh token for each reconnection); call `super` or return a new
///   ``HTTPRequestOperation`` for the request.
/// - Do not override `start()`, `cancel()`, `isExecuting` or `isFinished`.
open class EventStreamOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: every mutable field lives in `state`, one struct behind one Mutex;
    // the other stored properties are immutable and Sendable. Nothing is called out while the
    // lock is held. (Foundation's `Operation` is itself `@unchecked Sendable`, so the compiler
    // checks no subclass either way: this says so, and why it holds.)

    /// Called with each event, on ``completionQueue``, one at a time and in order.
    public typealias EventHandler = @Sendable (_ operation: EventStreamOperation, _ event: ServerSentEvent) -> Void

    /// Where the events go.
    enum Delivery {
        case handler(EventHandler)
        case channel(EventChannel)
    }

    struct State: MachineLoopState {
        var phase = OperationPhase.ready
        var machine: EventStreamMachine
        var delivery: Delivery?
        var completionQueue: DispatchQueue?
        /// The connection being read, to close on a pause or cancel.
        var connection: HTTPRequestOperation?
        /// Makes each connection's operation with its manager's settings; nil: a plain one.
        var makeConnection: (@Sendable (URLRequest) -> HTTPRequestOperation)?
        /// The id the last delivered event carried (taken by the handler or the sequence's
        /// loop), or that the stream moved to after it: where a restart resumes.
        var lastEventID: String
        /// The id the stream has read up to, delivered or waiting in a sequence's buffer: what
        /// a reconnection sends (the events in the buffer are not asked for again).
        var receivedLastEventID: String
        var error: (any Error)?
        var connections = 0
        var eventsDelivered = 0
        /// Set by an effective cancel: nothing counts as delivered after it.
        var cancelled = false
    }

    let state: Mutex<State>
    /// Where the loop waits between connections and while paused.
    let wakeup = Wakeup()

    /// The request of every connection (before ``connectionOperation(for:)`` adds
    /// `Last-Event-ID` and `Accept`).
    public let request: URLRequest
    /// How it reconnects and what it accepts.
    public let configuration: EventStreamConfiguration

    /// Creates an operation that reads the event stream at `request`.
    ///
    /// - Parameters:
    ///   - request: The stream's request (a GET, usually).
    ///   - lastEventID: Where to resume: the ``lastEventID`` an earlier operation (or an earlier
    ///     process) reached, sent as `Last-Event-ID` from the first connection on. Empty: from
    ///     the start.
    ///   - configuration: How it reconnects and what it accepts.
    public init(request: URLRequest, lastEventID: String = "", configuration: EventStreamConfiguration = EventStreamConfiguration()) {
        self.request = request
        self.configuration = configuration
        state = Mutex(State(machine: EventStreamMachine(configuration: configuration, method: request.httpMethod ?? "GET"),
                            lastEventID: lastEventID,
                            receivedLastEventID: lastEventID))
        super.init()
    }

    /// Makes each connection's operation with `make` (a manager's settings). Before start.
    func makeConnections(with make: @escaping @Sendable (URLRequest) -> HTTPRequestOperation) {
        state.withLock { $0.makeConnection = make }
    }

    // MARK: - Configuration and results

    /// Sets the block each event is handed to. Set it before the operation starts.
    public func setEventHandler(_ handler: EventHandler?) {
        state.withLock { $0.delivery = handler.map { .handler($0) } }
    }

    /// Sends the events to `channel` (``ServerSentEventStream``) instead of the handler.
    func deliverEvents(to channel: EventChannel) {
        state.withLock { $0.delivery = .channel(channel) }
    }

    /// The sequence's loop took `item`: it counts as delivered, also after the stream ended
    /// (the events that waited in the buffer then), unless it was cancelled.
    func taken(_ item: EventChannel.Item) {
        state.withLock { state in
            guard !state.cancelled else { return }
            switch item {
            case .event(let event):
                state.eventsDelivered += 1
                state.lastEventID = event.lastEventID
            case .lastEventID(let id):
                state.lastEventID = id
            }
        }
    }

    /// The queue the event handler runs on; nil: a global queue (the handler still runs one
    /// event at a time). Set it before the operation starts.
    public var completionQueue: DispatchQueue? {
        get { state.withLock { $0.completionQueue } }
        set { state.withLock { $0.completionQueue = newValue } }
    }

    /// The last event id delivered (to the handler, or taken by the sequence's loop): what a
    /// new operation resumes from after a restart. Empty when no event carried an id. A
    /// reconnection sends the last id received, which is ahead of this while events wait in
    /// a sequence's buffer.
    public var lastEventID: String { state.withLock { $0.lastEventID } }

    /// Why the operation failed, once finished; nil while running and after the server's 204.
    public var error: (any Error)? { state.withLock { $0.error } }

    /// How many connections were opened so far (the first and every reconnection).
    public var connectionCount: Int { state.withLock { $0.connections } }

    /// How many events were delivered so far.
    public var eventCount: Int { state.withLock { $0.eventsDelivered } }

    /// Whether the operation is paused (started, neither executing nor finished).
    public var isPaused: Bool { state.withLock { $0.phase == .paused } }

    /// The operation for one connection to `request` (which already carries `Last-Event-ID`
    /// when there is one). Override to change a connection's request or settings; the stream
    /// then sets what it needs on the result (its body streamed, every status an answer,
    /// automatic resume off). Called off the network thread, before each connection.
    open func connectionOperation(for request: URLRequest) -> HTTPRequestOperation {
        state.withLock { $0.makeConnection }?(request) ?? HTTPRequestOperation(request: request)
    }

    // MARK: - Operation

    open override var isAsynchronous: Bool { true }

    open override var isExecuting: Bool { state.withLock { $0.phase == .executing } }

    open override var isFinished: Bool { state.withLock { $0.phase == .finished } }

    /// Starts reading. Called by the queue; on a paused operation it does what ``resume()``
    /// does.
    open override func start() {
        let start = state.withLock { $0.begin() }
        switch start {
        case .run(let first, let keys):
            announce(phaseKeys: keys)
            Task { await self.run(from: first) }
        case .resume:
            resume()
        case .ignore:
            break
        }
    }

    /// Stops the stream: its connection closes, no event is handed over after this returns
    /// (beyond one the handler already holds), and the operation finishes with
    /// `URLError(.cancelled)`.
    open override func cancel() {
        let (interrupt, connection, delivery) = state.withLock { state in
            let interrupt = state.machine.cancel()
            if state.machine.phase == .cancelling { state.cancelled = true }
            return (interrupt, state.connection, state.delivery)
        }
        super.cancel()
        guard interrupt else { return }
        // The sequence drops what waits in its buffer, and a loop waiting for room in a
        // buffer nobody reads goes on to finish.
        if case .channel(let channel)? = delivery { channel.cancel(with: cancellationError) }
        connection?.cancel()
        wakeup.wake()
    }

    /// Closes the connection and holds the stream (its last event id kept) until ``resume()``.
    /// A paused operation is neither executing nor finished: its queue still counts it. A
    /// stream that does not reconnect (a POST, see
    /// ``EventStreamConfiguration/reconnectsNonIdempotentRequests``) is not paused.
    public func pause() {
        let paused = state.withLock { $0.pauseLoop() }
        completeLoopMove(paused?.keys, closing: paused?.connection, waking: wakeup)
    }

    /// Reconnects a paused stream at once, from its last event id.
    public func resume() {
        completeLoopMove(state.withLock { $0.resumeLoop() }, waking: wakeup)
    }

    /// Finishes a stream that has not started with `error` (its manager, shut down, refused
    /// it): the sequence's loop gets the error, and the operation is finished.
    func refuse(_ error: any Error) {
        let refused = state.withLock { state -> (EventChannel?, [String])? in
            guard state.phase == .ready else { return nil }
            _ = state.machine.cancel()
            state.cancelled = true
            state.error = error
            let channel: EventChannel? = if case .channel(let channel)? = state.delivery { channel } else { nil }
            state.delivery = nil
            state.makeConnection = nil
            return (channel, state.phase.move(to: .finished))
        }
        guard let (channel, keys) = refused else { return }
        channel?.cancel(with: error)
        announce(phaseKeys: keys)
    }

    /// The error of a cancelled stream.
    var cancellationError: URLError {
        URLError(.cancelled, url: request.url, description: "The event stream was cancelled.")
    }
}
