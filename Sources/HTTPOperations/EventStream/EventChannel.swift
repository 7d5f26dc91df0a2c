import Synchronization

/// Hands events from an ``EventStreamOperation``'s loop to a task iterating over
/// ``ServerSentEventStream``, with backpressure: when ``capacity`` events wait, the loop waits
/// too (and reads no more, so libcurl pauses the connection). No thread blocks on either side.
///
/// Thread-safety: everything lives in one struct behind one Mutex; continuations are resumed
/// outside it.
final class EventChannel: Sendable {
    /// How many events may wait for the consumer before the producer waits.
    static let capacity = 16

    private struct State {
        var events: [ServerSentEvent] = []
        /// Set once the operation's outcome is known: nil error for a stream the server ended.
        var end: Result<Void, any Error>?
        var consumer: CheckedContinuation<ServerSentEvent?, any Error>?
        var producer: CheckedContinuation<Bool, Never>?
        var abandoned = false
    }

    private let state = Mutex(State())

    /// Adds `event`, waiting while the buffer is full; false when the consumer has gone.
    func push(_ event: ServerSentEvent) async -> Bool {
        enum Step {
            case handed(CheckedContinuation<ServerSentEvent?, any Error>)
            case queued
            case mustWait
            case gone
        }
        let step = state.withLock { state -> Step in
            if state.abandoned || state.end != nil { return .gone }
            if let consumer = state.consumer {
                state.consumer = nil
                return .handed(consumer)
            }
            state.events.append(event)
            return state.events.count < Self.capacity ? .queued : .mustWait
        }
        switch step {
        case .handed(let consumer):
            consumer.resume(returning: event)
            return true
        case .queued:
            return true
        case .gone:
            return false
        case .mustWait:
            return await withCheckedContinuation { (producer: CheckedContinuation<Bool, Never>) in
                let answer = state.withLock { state -> Bool? in
                    if state.abandoned { return false }
                    if state.events.count < Self.capacity { return true }
                    state.producer = producer
                    return nil
                }
                if let answer { producer.resume(returning: answer) }
            }
        }
    }

    /// The stream ended (`error` nil: the server stopped it), after the events pushed.
    func finish(_ error: (any Error)?) {
        let (consumer, producer) = state.withLock { state in
            guard state.end == nil else { return (CheckedContinuation<ServerSentEvent?, any Error>?.none, CheckedContinuation<Bool, Never>?.none) }
            state.end = error.map { .failure($0) } ?? .success(())
            defer {
                state.producer = nil
                state.consumer = nil
            }
            return (state.events.isEmpty ? state.consumer : nil, state.producer)
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
            let answer = state.withLock { state -> Answer in
                if !state.events.isEmpty {
                    let event = state.events.removeFirst()
                    defer { state.producer = nil }
                    return .event(event, state.producer)
                }
                if let end = state.end { return .end(end) }
                if state.abandoned { return .end(.failure(CancellationError())) }
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
            state.abandoned = true
            state.events = []
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
