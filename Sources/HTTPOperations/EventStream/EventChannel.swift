import Synchronization

/// Hands events from an ``EventStreamOperation``'s loop to a task iterating over
/// ``ServerSentEventStream``, with backpressure: when ``capacity`` items wait, the loop waits
/// too (and reads no more, so libcurl pauses the connection). No thread blocks on either side.
///
/// What the consumer has taken is what counts as delivered: `taken` runs for each item as
/// `next()` hands it out (an event, or a move of the last event id by an event without data),
/// so the operation's ``EventStreamOperation/lastEventID`` never names an event still waiting
/// here.
///
/// Thread-safety: everything lives in one struct behind one Mutex; continuations are resumed
/// outside it. `taken` is called inside it, so that the items are reported in the order they
/// were taken (it takes the operation's lock, which is never held while this one is taken).
final class EventChannel: Sendable {
    /// What waits for the consumer.
    enum Item: Sendable {
        case event(ServerSentEvent)
        /// The stream's last event id moved without an event (an `id` with no `data`).
        case lastEventID(String)
    }

    /// How many items may wait for the consumer before the producer waits.
    static let capacity = 16

    private struct State {
        var items: [Item] = []
        /// Set once the operation's outcome is known: nil error for a stream the server ended.
        var end: Result<Void, any Error>?
        var consumer: CheckedContinuation<ServerSentEvent?, any Error>?
        var producer: CheckedContinuation<Bool, Never>?
        /// The consumer went away, or the operation stopped: pushes are refused.
        var closed = false
    }

    private let state = Mutex(State())
    private let taken: @Sendable (Item) -> Void

    /// A channel that reports each item the consumer takes to `taken`.
    init(taken: @escaping @Sendable (Item) -> Void) {
        self.taken = taken
    }

    /// Adds `item`, waiting while the buffer is full; false when the channel was closed (the
    /// consumer went away, or ``cancel(with:)``), before or while it waited. An id move with nothing
    /// waiting before it counts as taken at once.
    func push(_ item: Item) async -> Bool {
        enum Step {
            case handed(CheckedContinuation<ServerSentEvent?, any Error>, ServerSentEvent)
            case takenNow
            case queued
            case mustWait
            case refused
        }
        let step = state.withLock { state -> Step in
            if state.closed || state.end != nil { return .refused }
            switch item {
            case .event(let event):
                if let consumer = state.consumer {
                    state.consumer = nil
                    taken(item)
                    return .handed(consumer, event)
                }
            case .lastEventID:
                if state.items.isEmpty {
                    taken(item)
                    return .takenNow
                }
            }
            state.items.append(item)
            return state.items.count < Self.capacity ? .queued : .mustWait
        }
        switch step {
        case .handed(let consumer, let event):
            consumer.resume(returning: event)
            return true
        case .takenNow:
            return true
        case .queued:
            return true
        case .refused:
            return false
        case .mustWait:
            return await withCheckedContinuation { (producer: CheckedContinuation<Bool, Never>) in
                let answer = state.withLock { state -> Bool? in
                    if state.closed { return false }
                    if state.items.count < Self.capacity { return true }
                    state.producer = producer
                    return nil
                }
                if let answer { producer.resume(returning: answer) }
            }
        }
    }

    /// The operation was cancelled: what waits is dropped, every push is refused from now on
    /// (a producer waiting for room is woken: a cancel must not wait for a consumer that may
    /// never come), and the consumer gets `error`.
    func cancel(with error: any Error) {
        let (consumer, producer) = state.withLock { state in
            state.closed = true
            state.items = []
            if state.end == nil { state.end = .failure(error) }
            defer {
                state.producer = nil
                state.consumer = nil
            }
            return (state.consumer, state.producer)
        }
        producer?.resume(returning: false)
        consumer?.resume(throwing: error)
    }

    /// The stream ended (`error` nil: the server stopped it). The items waiting are still
    /// handed out first, unless `discardingWaiting` (a cancel: nothing after it).
    func finish(_ error: (any Error)?, discardingWaiting: Bool) {
        let (consumer, producer) = state.withLock { state in
            guard state.end == nil else { return (CheckedContinuation<ServerSentEvent?, any Error>?.none, CheckedContinuation<Bool, Never>?.none) }
            state.end = error.map { .failure($0) } ?? .success(())
            state.closed = true
            if discardingWaiting { state.items = [] }
            defer {
                state.producer = nil
                state.consumer = nil
            }
            return (state.items.isEmpty ? state.consumer : nil, state.producer)
        }
        producer?.resume(returning: false)
        guard let consumer else { return }
        if let error { consumer.resume(throwing: error) } else { consumer.resume(returning: nil) }
    }

    /// The next event; nil after the last; throws the operation's error.
    func next() async throws -> ServerSentEvent? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ServerSentEvent?, any Error>) in
            enum Answer {
                case event(ServerSentEvent, CheckedContinuation<Bool, Never>?)
                case end(Result<Void, any Error>)
                case wait
            }
            var takenItems: [Item] = []
            let answer = state.withLock { state -> Answer in
                defer { for item in takenItems { taken(item) } }
                // An event, with the id moves that came right after it: everything before
                // them has then been taken.
                while case .lastEventID? = state.items.first { takenItems.append(state.items.removeFirst()) }
                if case .event(let event)? = state.items.first {
                    takenItems.append(state.items.removeFirst())
                    while case .lastEventID? = state.items.first { takenItems.append(state.items.removeFirst()) }
                    defer { state.producer = nil }
                    return .event(event, state.producer)
                }
                if let end = state.end { return .end(end) }
                state.consumer = continuation
                return .wait
            }
            switch answer {
            case .event(let event, let producer):
                producer?.resume(returning: true)
                continuation.resume(returning: event)
            case .end(.success):
                continuation.resume(returning: nil)
            case .end(.failure(let error)):
                continuation.resume(throwing: error)
            case .wait:
                break
            }
        }
    }

    /// The consumer went away: a waiting `next()` throws `CancellationError`, a waiting
    /// producer is told to stop.
    func abandon() {
        let (consumer, producer) = state.withLock { state in
            state.closed = true
            // A later `next()` ends here; the operation's own end, if it comes, is not seen.
            if state.end == nil { state.end = .failure(CancellationError()) }
            state.items = []
            defer {
                state.consumer = nil
                state.producer = nil
            }
            return (state.consumer, state.producer)
        }
        producer?.resume(returning: false)
        consumer?.resume(throwing: CancellationError())
    }
}
