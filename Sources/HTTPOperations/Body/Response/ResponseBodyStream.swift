import Foundation

/// A response body as it arrives, in chunks of up to 256 KiB. A loop that waits gets the bytes
/// as curl delivers them (an event, a line of NDJSON); a loop that lags gets them gathered into
/// larger chunks:
///
/// ```swift
/// let body = try manager.stream("export.ndjson")
/// for try await chunk in body {
///     try await process(chunk)          // the transfer waits while this is slow
/// }
/// ```
///
/// Backpressure: at most 6 chunks (1.5 MiB) wait for the consumer; beyond
/// that the transfer pauses in libcurl (no thread blocks) and continues once the loop takes
/// more. Memory stays bounded whatever the size of the body.
///
/// The iteration ends after the last byte, or throws the operation's error (a transport
/// failure, a status or content type the response serializer refuses) after the bytes that
/// arrived before it. The ``operation``'s `response` is known once the first chunk has
/// arrived. Cancelling the iterating task, or dropping the stream and its iterators before
/// the end, cancels the operation.
public struct ResponseBodyStream: AsyncSequence, Sendable {
    /// A chunk of the body.
    public typealias Element = Data

    /// Cancels the operation when the last copy of the stream and its iterators goes away.
    fileprivate final class Lifetime: Sendable {
        let operation: HTTPRequestOperation
        let channel: ResponseBodyChannel

        init(operation: HTTPRequestOperation, channel: ResponseBodyChannel) {
            self.operation = operation
            self.channel = channel
        }

        deinit {
            // A finished operation ignores both.
            channel.abandon()
            operation.cancel()
        }

        /// Awaits `wait` on the channel; cancelling the waiting task abandons the channel and
        /// cancels the operation.
        func awaiting<Value: Sendable>(_ wait: @Sendable (ResponseBodyChannel) async throws -> Value) async throws -> Value {
            try await withTaskCancellationHandler {
                try await wait(channel)
            } onCancel: {
                channel.abandon()
                operation.cancel()
            }
        }
    }

    private let lifetime: Lifetime

    /// The operation that receives the body: its `response`, `timings`, `error`.
    public var operation: HTTPRequestOperation { lifetime.operation }

    /// Streams `operation`'s body, which must not have started: it goes to this stream instead
    /// of memory, a file or an output stream (a `destinationURL` or `outputStream` set before
    /// is dropped). Enqueue or start the operation yourself (or use
    /// ``HTTPRequestOperationManager/stream(_:)``).
    public init(_ operation: HTTPRequestOperation) {
        let channel = ResponseBodyChannel()
        operation.streamBody(to: channel)
        operation.whenOutcomeKnown { operation in channel.finish(operation.error) }
        lifetime = Lifetime(operation: operation, channel: channel)
    }

    /// The head of the answer whose body this is, as soon as it arrived (before any of the
    /// body); nil when the operation ended without one. Cancelling the waiting task cancels
    /// the operation.
    func responseHead() async throws -> ResponseHead? {
        try await lifetime.awaiting { try await $0.responseHead() }
    }

    /// Makes an iterator; iterate once.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(lifetime: lifetime)
    }

    /// Gives the chunks in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let lifetime: Lifetime

        /// The next chunk; nil after the last one.
        public mutating func next() async throws -> Data? {
            try await lifetime.awaiting { try await $0.next() }
        }
    }
}

extension HTTPRequestOperationManager {
    /// Enqueues `request` and returns its body as it arrives (see ``ResponseBodyStream``). The
    /// response is validated by a default ``HTTPResponseSerializer`` (status 200–299, whatever
    /// the manager's serializer): any other status throws at the end of the body.
    public func stream(_ request: URLRequest) -> ResponseBodyStream {
        let operation = httpRequestOperation(with: request, success: nil, failure: nil)
        operation.setResponseSerializer(.data)
        let body = ResponseBodyStream(operation)
        enqueue(operation)
        return body
    }

    /// GET `urlString` (relative to ``baseURL``) and return its body as it arrives.
    ///
    /// - Throws: ``RequestSerializationError`` when the request cannot be built.
    public func stream(_ urlString: String, parameters: Any? = nil) throws -> ResponseBodyStream {
        stream(try makeRequest("GET", urlString, parameters: parameters))
    }
}
