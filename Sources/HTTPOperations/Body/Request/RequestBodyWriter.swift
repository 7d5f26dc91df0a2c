import Foundation

/// Writes a ``StreamedRequestBody`` while its request runs: each chunk is handed to curl,
/// which sends it as soon as it can.
///
/// One writer serves one send of the body. When the body must be sent again (a 307 or 308,
/// an authentication round) the closure runs once more with a new writer; this one's next
/// ``write(_:)`` throws `CancellationError`, as it does once the request ended.
///
/// Thread-safety: immutable; its state is the transfer's body reader's, behind its lock.
public final class RequestBodyWriter: Sendable {
    /// The reader this writer feeds; weak, so a writer kept by a closure that never returns
    /// does not keep a finished transfer's buffers alive.
    private weak let reader: BodyReader?
    /// The send this writer belongs to: a newer one (a rewind) makes it stale.
    let generation: Int

    init(reader: BodyReader, generation: Int) {
        self.reader = reader
        self.generation = generation
    }

    /// Writes `bytes` as the body's next bytes.
    ///
    /// Returns once curl can take them: right away while less than 256 KiB written are still
    /// waiting to be sent; otherwise it suspends until enough was sent (backpressure). An
    /// empty `bytes` writes nothing.
    ///
    /// - Throws: `CancellationError` when the request ended, the body is being sent again by
    ///   a newer writer, or the task is cancelled; `URLError(.requestBodyStreamExhausted)`
    ///   when the bytes go past the body's declared `length`.
    public func write(_ bytes: Data) async throws {
        guard let reader else { throw CancellationError() }
        try await reader.accept(bytes, from: generation)
    }
}
