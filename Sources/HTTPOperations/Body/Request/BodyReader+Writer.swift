import Foundation

/// A ``StreamedRequestBody``'s side of the reader: its closure runs in a task and writes
/// chunks among the ready ones, where curl's read callback takes them as for a stream.
///
/// Backpressure: a write that would put more than ``BodyReader/bytesAhead`` bytes in waiting
/// suspends (one continuation, `writerWaiting`) until the network thread has taken enough for
/// it (``Shared/writerNeeds``). A write into an empty queue is taken whatever its size, so one
/// large write never waits for room that cannot come.
extension BodyReader {
    /// What a send's end leaves to do outside the lock: a writer to wake and a task to cancel.
    struct EndedWriter {
        var waiting: CheckedContinuation<Void, any Error>?
        var task: Task<Void, Never>?

        /// Wakes the writer with `CancellationError` and cancels its task. The cancel is made
        /// on a global queue: `Task.cancel()` runs the task's cancellation handlers (the
        /// caller's code) in the calling thread, which may be the network thread.
        func cancel() {
            waiting?.resume(throwing: CancellationError())
            if let task { DispatchQueue.global().async { task.cancel() } }
        }
    }

    /// Whether a write of `count` bytes fits now: into an empty queue always, otherwise
    /// while at most ``bytesAhead`` bytes would wait. Under the lock.
    static func writeFits(_ count: Int, _ shared: Shared) -> Bool {
        shared.readyBytes == 0 || shared.readyBytes + count <= bytesAhead
    }

    /// Ends the current send: a newer generation, nothing ready. Under the lock; the caller
    /// calls ``EndedWriter/cancel()`` on the result after it.
    static func endSend(_ shared: inout Shared) -> EndedWriter {
        shared.generation += 1
        shared.ready.removeAll()
        shared.readyBytes = 0
        shared.writtenBytes = 0
        defer {
            shared.writerWaiting = nil
            shared.writerTask = nil
        }
        return EndedWriter(waiting: shared.writerWaiting, task: shared.writerTask)
    }

    /// What the reader keeps of a ``StreamedRequestBody``: its parts, which are values (the
    /// body is an `InputStream`, which Foundation does not make `Sendable`).
    struct WrittenBody: Sendable {
        let length: Int64?
        let isRestartable: Bool
        let produce: StreamedRequestBody.Producer

        init(_ body: StreamedRequestBody) {
            length = body.length
            isRestartable = body.isRestartable
            produce = body.produce
        }
    }

    /// Runs `body`'s closure for `generation` in a task of its own.
    func startWriting(_ body: WrittenBody, generation: Int) {
        let writer = RequestBodyWriter(reader: self, generation: generation)
        let produce = body.produce
        let task = Task { [weak self] in
            let outcome: Result<[(name: String, value: String)], any Error>
            do {
                outcome = .success(try await produce(writer))
            } catch {
                outcome = .failure(error)
            }
            self?.writerEnded(generation: generation, outcome)
        }
        let stale = shared.withLock { shared -> Bool in
            guard shared.generation == generation else { return true }
            shared.writerTask = task
            return false
        }
        if stale { task.cancel() }
    }

    /// Takes `bytes` from the writer of `generation`, waiting for room when too many wait.
    func accept(_ bytes: Data, from generation: Int) async throws {
        guard !bytes.isEmpty else { return }
        while true {
            try Task.checkCancellation()
            enum Step { case taken(notify: Bool), full, stale, failed(URLError, notify: Bool) }
            let step = shared.withLock { shared -> Step in
                guard shared.generation == generation, !shared.atEnd, shared.failure == nil else { return .stale }
                if !Self.writeFits(bytes.count, shared) { return .full }
                let total = shared.writtenBytes + Int64(bytes.count)
                if let length = written?.length, total > length {
                    let failure = URLError(.requestBodyStreamExhausted, url: nil,
                                           description: "The request body's writer wrote more than its declared length of \(length) bytes.")
                    shared.failure = failure
                    defer { shared.waiting = false }
                    return .failed(failure, notify: shared.waiting)
                }
                shared.ready.append(bytes)
                shared.readyBytes += bytes.count
                shared.writtenBytes = total
                defer { shared.waiting = false }
                return .taken(notify: shared.waiting)
            }
            switch step {
            case .taken(let notify):
                if notify { dataAvailable() }
                return
            case .stale:
                throw CancellationError()
            case .failed(let failure, let notify):
                if notify { dataAvailable() }
                throw failure
            case .full:
                try await waitForRoom(for: bytes.count, generation: generation)
            }
        }
    }

    /// Suspends until curl took enough for a write of `count` bytes to fit, the send ended, or
    /// the task is cancelled.
    private func waitForRoom(for count: Int, generation: Int) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Now { case wait, resume, cancelled }
                let now = shared.withLock { shared -> Now in
                    // Checked under the lock: a cancellation handler that ran before this
                    // found no continuation to resume.
                    if Task.isCancelled || shared.generation != generation { return .cancelled }
                    if Self.writeFits(count, shared) { return .resume }
                    shared.writerWaiting = continuation
                    shared.writerNeeds = count
                    return .wait
                }
                switch now {
                case .wait: break
                case .resume: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let waiting = shared.withLock { shared in
                defer { shared.writerWaiting = nil }
                return shared.writerWaiting
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// The closure of `generation` returned or threw: the body ends, or fails.
    private func writerEnded(generation: Int, _ outcome: Result<[(name: String, value: String)], any Error>) {
        // The block is the caller's code: asked here, in the writer's task, not on the
        // network thread; and only for a body that ended well.
        let fields: [(name: String, value: String)]
        switch outcome {
        case .success(let produced): fields = produced + (trailers?() ?? [])
        case .failure: fields = []
        }
        let notify = shared.withLock { shared -> Bool in
            guard shared.generation == generation, shared.failure == nil else { return false }
            shared.writerTask = nil
            switch outcome {
            case .failure(let error):
                var info: [String: Any] = [NSLocalizedDescriptionKey: "The request body's writer threw \(error)."]
                info[NSUnderlyingErrorKey] = error
                shared.failure = URLError(.requestBodyStreamExhausted, userInfo: info)
            case .success:
                if let length = written?.length, shared.writtenBytes != length {
                    shared.failure = URLError(.requestBodyStreamExhausted, url: nil,
                                              description: "The request body's writer wrote \(shared.writtenBytes) bytes of its declared \(length).")
                } else if let invalid = Self.invalidTrailer(in: fields) {
                    shared.failure = invalid
                } else {
                    shared.trailerFields = fields
                    shared.atEnd = true
                }
            }
            defer { shared.waiting = false }
            return shared.waiting
        }
        if notify { dataAvailable() }
    }
}
