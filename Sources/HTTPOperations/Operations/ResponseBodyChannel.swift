import Foundation
import Synchronization

/// Hands a response body from an operation's writer queue to a task that iterates over it
/// (``ResponseBodyStream``), without blocking either side.
///
/// Backpressure: a chunk counts against the operation's ``BodyWriter`` until the consumer
/// takes it (`onTaken`), so when the consumer lags, the writer runs out of room and the
/// transfer pauses in libcurl — no thread waits, and at most ``BodyWriter/buffersAhead``
/// chunks of ``BodyWriter/bufferSize`` bytes are held per stream.
///
/// Thread-safety: everything lives in one struct behind one Mutex; continuations are resumed
/// and callbacks called outside it.
final class ResponseBodyChannel: Sendable {
    private struct Chunk {
        let data: Data
        let onTaken: @Sendable () -> Void
    }

    private struct State {
        var chunks: [Chunk] = []
        /// Set once the operation's outcome is known: nil error for a complete body.
        var end: Result<Void, any Error>?
        /// The consumer, waiting for the next chunk.
        var waiter: CheckedContinuation<Data?, any Error>?
        /// The consumer went away: chunks are dropped as they come.
        var abandoned = false
    }

    private let state = Mutex(State())

    /// Called by the writer queue, in order. `onTaken` runs once the consumer has the chunk
    /// (or at once when nobody will take it).
    func push(_ data: Data, onTaken: @escaping @Sendable () -> Void) {
        let waiter = state.withLock { state -> CheckedContinuation<Data?, any Error>?? in
            if state.abandoned { return .some(nil) }
            guard let waiter = state.waiter else {
                state.chunks.append(Chunk(data: data, onTaken: onTaken))
                return nil
            }
            state.waiter = nil
            return waiter
        }
        switch waiter {
        case .none:
            break
        case .some(.none):
            onTaken()
        case .some(.some(let waiter)):
            onTaken()
            waiter.resume(returning: data)
        }
    }

    /// The body is complete (`error` nil) or failed; after the chunks already pushed.
    func finish(_ error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Data?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = error.map { .failure($0) } ?? .success(())
            defer { state.waiter = nil }
            return state.chunks.isEmpty ? state.waiter : nil
        }
        guard let waiter else { return }
        if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
    }

    /// The next chunk, nil at the end of a complete body; throws the operation's error.
    func next() async throws -> Data? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
            enum Answer {
                case chunk(Chunk)
                case end(Result<Void, any Error>)
                case wait
            }
            let answer = state.withLock { state -> Answer in
                if !state.chunks.isEmpty { return .chunk(state.chunks.removeFirst()) }
                if let end = state.end { return .end(end) }
                if state.abandoned { return .end(.failure(CancellationError())) }
                state.waiter = continuation
                return .wait
            }
            switch answer {
            case .chunk(let chunk):
                chunk.onTaken()
                continuation.resume(returning: chunk.data)
            case .end(.success):
                continuation.resume(returning: nil)
            case .end(.failure(let error)):
                continuation.resume(throwing: error)
            case .wait:
                break
            }
        }
    }

    /// The consumer stopped (its task was cancelled, or it dropped the stream): a waiting
    /// `next()` throws `CancellationError`, held chunks are released.
    func abandon() {
        let (waiter, chunks) = state.withLock { state in
            state.abandoned = true
            defer {
                state.waiter = nil
                state.chunks = []
            }
            return (state.waiter, state.chunks)
        }
        for chunk in chunks { chunk.onTaken() }
        waiter?.resume(throwing: CancellationError())
    }
}
