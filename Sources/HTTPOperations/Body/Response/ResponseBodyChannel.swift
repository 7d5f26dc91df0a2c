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
        /// The head of the answer whose body this is, once it arrived.
        var head: ResponseHead?
        /// Tasks waiting for the head.
        var headWaiters: [CheckedContinuation<ResponseHead?, any Error>] = []
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

    /// The head of the answer whose body follows arrived (network thread; the first counts).
    func headArrived(_ head: ResponseHead) {
        let waiters = state.withLock { state -> [CheckedContinuation<ResponseHead?, any Error>] in
            guard state.head == nil, state.end == nil else { return [] }
            state.head = head
            defer { state.headWaiters = [] }
            return state.headWaiters
        }
        for waiter in waiters { waiter.resume(returning: head) }
    }

    /// The head of the answer, once it arrived; nil when the operation ended without one
    /// (an answer with no head, `file:`); throws the operation's error when it failed first.
    func responseHead() async throws -> ResponseHead? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ResponseHead?, any Error>) in
            let answer = state.withLock { state -> Result<ResponseHead?, any Error>? in
                if let head = state.head { return .success(head) }
                switch state.end {
                case .success?: return .success(nil)
                case .failure(let error)?: return .failure(error)
                case nil: break
                }
                if state.abandoned { return .failure(CancellationError()) }
                state.headWaiters.append(continuation)
                return nil
            }
            if let answer { continuation.resume(with: answer) }
        }
    }

    /// The body is complete (`error` nil) or failed; after the chunks already pushed.
    func finish(_ error: (any Error)?) {
        let (waiter, headWaiters) = state.withLock { state in
            guard state.end == nil else { return (CheckedContinuation<Data?, any Error>?.none, [CheckedContinuation<ResponseHead?, any Error>]()) }
            state.end = error.map { .failure($0) } ?? .success(())
            defer {
                state.waiter = nil
                state.headWaiters = []
            }
            return (state.chunks.isEmpty ? state.waiter : nil, state.headWaiters)
        }
        for headWaiter in headWaiters {
            if let error { headWaiter.resume(throwing: error) } else { headWaiter.resume(returning: nil) }
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
        let (waiter, chunks, headWaiters) = state.withLock { state in
            state.abandoned = true
            defer {
                state.waiter = nil
                state.chunks = []
                state.headWaiters = []
            }
            return (state.waiter, state.chunks, state.headWaiters)
        }
        for chunk in chunks { chunk.onTaken() }
        for headWaiter in headWaiters { headWaiter.resume(throwing: CancellationError()) }
        waiter?.resume(throwing: CancellationError())
    }
}
