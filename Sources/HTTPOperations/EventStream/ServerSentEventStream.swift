import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes

/// The events of an ``EventStreamOperation``, as an async sequence: it reconnects by itself,
/// delivers each event once and in order, and ends when the server answers 204.
///
/// ```swift
/// for try await event in try manager.events("feed") {
///     let update = try event.decode(Update.self)      // a Decodable, from the event's data
///     apply(update)
/// }
/// ```
///
/// Backpressure: at most 16 events wait for the loop; then the stream stops reading (libcurl
/// pauses the connection) until the loop takes more. The iteration throws the operation's
/// error (see ``EventStreamOperation``). Cancelling the iterating task, or dropping the
/// sequence and its iterators, cancels the operation.
public struct ServerSentEventStream: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = ServerSentEvent

    /// Cancels the operation when the last copy of the sequence and its iterators goes away.
    fileprivate final class Lifetime: Sendable {
        let operation: EventStreamOperation
        let channel: EventChannel

        init(operation: EventStreamOperation, channel: EventChannel) {
            self.operation = operation
            self.channel = channel
        }

        deinit {
            channel.abandon()
            operation.cancel()
        }
    }

    private let lifetime: Lifetime

    /// The operation that reads the stream: its ``EventStreamOperation/lastEventID`` is where a
    /// later process resumes.
    public var operation: EventStreamOperation { lifetime.operation }

    /// The events of `operation`, which must not have started: they come to this sequence
    /// instead of its event handler. Enqueue or start the operation yourself (or use
    /// ``HTTPRequestOperationManager/events(_:lastEventID:configuration:)``).
    public init(_ operation: EventStreamOperation) {
        let channel = EventChannel { [weak operation] item in operation?.taken(item) }
        operation.deliverEvents(to: channel)
        lifetime = Lifetime(operation: operation, channel: channel)
    }

    /// Makes an iterator; iterate once.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(lifetime: lifetime)
    }

    /// Gives the events in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let lifetime: Lifetime

        /// The next event; nil once the server ended the stream.
        public mutating func next() async throws -> ServerSentEvent? {
            let lifetime = self.lifetime
            return try await withTaskCancellationHandler {
                try await lifetime.channel.next()
            } onCancel: {
                lifetime.channel.abandon()
                lifetime.operation.cancel()
            }
        }
    }
}

extension HTTPRequestOperationManager {
    /// An operation that reads the event stream at `request` with the manager's settings
    /// (security policy, credential, headers, proxy: each connection is made by
    /// ``httpRequestOperation(with:success:failure:)``) and hands each event to `eventHandler`
    /// on the manager's completion queue. Not enqueued: add it to ``operationQueue``, where it
    /// holds one place until it finishes.
    public func eventStreamOperation(with request: URLRequest, lastEventID: String = "",
                                     configuration: EventStreamConfiguration = EventStreamConfiguration(),
                                     eventHandler: EventStreamOperation.EventHandler?) -> EventStreamOperation {
        let operation = EventStreamOperation(request: request, lastEventID: lastEventID, configuration: configuration)
        operation.makeConnections { [self] request in httpRequestOperation(with: request, success: nil, failure: nil) }
        operation.completionQueue = completionQueue
        operation.setEventHandler(eventHandler)
        return operation
    }

    /// Enqueues an event-stream operation for `request` and returns its events as they come
    /// (see ``ServerSentEventStream``).
    public func events(_ request: URLRequest, lastEventID: String = "",
                       configuration: EventStreamConfiguration = EventStreamConfiguration()) -> ServerSentEventStream {
        let operation = eventStreamOperation(with: request, lastEventID: lastEventID, configuration: configuration, eventHandler: nil)
        let events = ServerSentEventStream(operation)
        enqueue(operation)
        return events
    }

    /// GET `urlString` (relative to ``baseURL``) as an event stream.
    ///
    /// - Throws: ``RequestSerializationError`` when the request cannot be built.
    public func events(_ urlString: String, parameters: Any? = nil, lastEventID: String = "",
                       configuration: EventStreamConfiguration = EventStreamConfiguration()) throws -> ServerSentEventStream {
        events(try makeRequest("GET", urlString, parameters: parameters), lastEventID: lastEventID, configuration: configuration)
    }

    /// The HTTPTypes door: `request` (with its authority and path resolved as ``perform(_:body:collectUpTo:)``
    /// does) as an event stream.
    ///
    /// - Throws: ``RequestSerializationError`` (`.invalidURL`, `.unencodableHeaderValue`) when
    ///   the request cannot be sent as it is.
    public func events(for request: HTTPRequest, lastEventID: String = "",
                       configuration: EventStreamConfiguration = EventStreamConfiguration()) throws -> ServerSentEventStream {
        events(try urlRequest(for: request), lastEventID: lastEventID, configuration: configuration)
    }
}
