import Foundation
import Synchronization

/// A response and what the response serializer made of it, for async callers of the untyped
/// verbs (deprecated: the typed ones return the value itself).
public struct ResponseOutcome: @unchecked Sendable {
    // @unchecked Sendable: `object` is whatever the serializer made (JSON is `Any`); it is
    // handed over whole to the awaiting task and never touched by the library again.

    /// The HTTP response: the operation's `response`, built from the head it received when
    /// first read. (Not built for a caller that does not ask: building a Foundation response
    /// cost 16% of the CPU of an awaited small GET, Docs/Performance.md.)
    public var response: HTTPURLResponse? { source.response }
    /// The serialized object.
    public let object: Any?
    private let source: OutcomeResponse

    init(of operation: HTTPRequestOperation) {
        self.object = operation.responseObject
        self.source = OutcomeResponse(of: operation)
    }
}

/// An outcome's response, made when first asked for, without keeping the operation alive
/// (an operation holds its dependencies, and so a whole chain and its bodies, until it is
/// released): while the operation lives it is the operation's own response, the same object;
/// after, it is built from the head the operation received.
///
/// Its mutable state is one struct behind one `Mutex`.
private final class OutcomeResponse: Sendable {
    private struct State {
        /// Whether `response` is the answer (then the rest is let go).
        var resolved: Bool
        var response: HTTPURLResponse?
        weak var operation: HTTPRequestOperation?
        var head: (head: ResponseHead, url: URL)?
    }

    private let state: Mutex<State>

    init(of operation: HTTPRequestOperation) {
        let (built, head) = operation.state.withLock { ($0.response, $0.responseHead) }
        if built != nil || type(of: operation) != HTTPRequestOperation.self {
            // Built already (it costs nothing), or a subclass that may override `response`:
            // asked now, as before.
            state = Mutex(State(resolved: true, response: operation.response))
        } else {
            state = Mutex(State(resolved: false, operation: operation, head: head))
        }
    }

    var response: HTTPURLResponse? {
        let (resolved, known, operation, head) = state.withLock { ($0.resolved, $0.response, $0.operation, $0.head) }
        if resolved { return known }
        // Outside the lock: the operation takes its own, and building is costly.
        let made = operation.map(\.response) ?? head.map { $0.head.httpURLResponse(for: $0.url) }
        return state.withLock { state in
            if !state.resolved {
                state = State(resolved: true, response: made)
            }
            return state.response
        }
    }
}

/// Progress of a transfer, for `AsyncStream`.
public struct TransferProgress: Sendable, Equatable {
    /// Bytes since the previous report.
    public let bytes: Int64
    /// Bytes so far.
    public let totalBytes: Int64
    /// Bytes expected in all; -1 when unknown.
    public let totalBytesExpected: Int64
}

extension HTTPRequestOperation {
    /// Waits until the operation's outcome is known (start or enqueue it yourself).
    ///
    /// Cancelling the awaiting task cancels the operation. The success and failure blocks are
    /// left alone and still run, before this returns.
    ///
    /// - Returns: The response and the serialized object.
    /// - Throws: The operation's error.
    @available(*, deprecated, message: "use outcome(as:) with the type its response serializer makes")
    public func outcome() async throws -> ResponseOutcome {
        try await outcome(startingWith: {})
    }

    /// Waits until the operation's outcome is known (start or enqueue it yourself) and returns
    /// what its response serializer made, as a `Value`: `Data` for an
    /// ``HTTPResponseSerializer``, `T` for a ``DecodableResponseSerializer``, an `Image`, ….
    /// The operation keeps the rest (``URLConnectionOperation/response``, timings). A body
    /// written to a file or stream, or an answer without one, makes no value: ask for an
    /// optional (`Data?.self`), which is nil then. (The JSON, property-list and XML
    /// serializers make values that are not `Sendable`; use a ``DecodableResponseSerializer``.)
    ///
    /// Cancelling the awaiting task cancels the operation. The success and failure blocks are
    /// left alone and still run, before this returns.
    ///
    /// - Throws: The operation's error, or ``ResponseSerializationError`` (`.emptyBody`,
    ///   `.decodingFailed`) when the serializer made no `Value`.
    public func outcome<Value: Sendable>(as type: Value.Type) async throws -> Value {
        try await typed(outcome(startingWith: {}), as: type)
    }

    /// The outcome's object as a `Value`; the response is built only for an error that reports it.
    func typed<Value>(_ outcome: ResponseOutcome, as type: Value.Type) throws -> Value {
        try typedResponseObject(outcome.object, as: type, response: outcome.response, data: nil)
    }

    /// Waits for the outcome after `start` ran, with the observer already in place (so an
    /// outcome that comes at once is not missed, and no task is needed to wait beside it).
    func outcome(startingWith start: () -> Void) async throws -> ResponseOutcome {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ResponseOutcome, any Error>) in
                // Outcome observers run exactly once, so the continuation resumes exactly once.
                whenOutcomeKnown { operation in
                    let operation = operation as! HTTPRequestOperation
                    if let error = operation.error {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume(returning: ResponseOutcome(of: operation))
                    }
                }
                start()
            }
        } onCancel: {
            self.cancel()
        }
    }

    /// The download progress as an `AsyncStream`; it finishes with the operation. Takes the
    /// place of any download progress block.
    public func downloadProgressStream() -> AsyncStream<TransferProgress> {
        AsyncStream { continuation in
            setDownloadProgressBlock { bytes, total, expected in
                continuation.yield(TransferProgress(bytes: bytes, totalBytes: total, totalBytesExpected: expected))
            }
            whenOutcomeKnown { _ in continuation.finish() }
        }
    }
}

extension HTTPRequestOperationManager {
    /// Enqueues `operation` and waits for its outcome; cancelling the task cancels it.
    @available(*, deprecated, message: "use run(_:as:) with the type the operation's response serializer makes")
    public func run(_ operation: HTTPRequestOperation) async throws -> ResponseOutcome {
        try await enqueueAndAwait(operation)
    }

    /// Enqueues `operation` and returns what its response serializer made, as a `Value` (see
    /// ``HTTPRequestOperation/outcome(as:)``); cancelling the task cancels it.
    public func run<Value: Sendable>(_ operation: HTTPRequestOperation, as type: Value.Type) async throws -> Value {
        try await operation.typed(enqueueAndAwait(operation), as: type)
    }

    /// Enqueues `operation` once its observer is in place, in the awaiting task: an
    /// unstructured task per request to wait beside it cost about a third more CPU per small GET.
    func enqueueAndAwait(_ operation: HTTPRequestOperation) async throws -> ResponseOutcome {
        try await operation.outcome { self.enqueue(operation) }
    }

    /// Runs `request` with the manager's settings and `serializer` (the manager's when nil).
    private func perform(_ request: URLRequest, serializer: (any URLResponseSerialization)? = nil) async throws -> ResponseOutcome {
        let operation = httpRequestOperation(with: request, success: nil, failure: nil)
        if let serializer { operation.responseSerializer = serializer }
        return try await enqueueAndAwait(operation)
    }

    private func perform(_ method: String, _ urlString: String, parameters: Any?,
                         serializer: (any URLResponseSerialization)? = nil) async throws -> ResponseOutcome {
        try await perform(makeRequest(method, urlString, parameters: parameters), serializer: serializer)
    }

    /// GET, awaited: the response and the serialized object.
    @available(*, deprecated, message: "use get(_:parameters:as:) with a Decodable type, or the callback verb")
    public func get(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("GET", urlString, parameters: parameters)
    }

    /// HEAD, awaited.
    @available(*, deprecated, message: "use head(_:parameters:as:) with a Decodable type, or the callback verb")
    public func head(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("HEAD", urlString, parameters: parameters)
    }

    /// POST, awaited.
    @available(*, deprecated, message: "use post(_:parameters:as:) with a Decodable type, or the callback verb")
    public func post(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("POST", urlString, parameters: parameters)
    }

    /// PUT, awaited.
    @available(*, deprecated, message: "use put(_:parameters:as:) with a Decodable type, or the callback verb")
    public func put(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("PUT", urlString, parameters: parameters)
    }

    /// PATCH, awaited.
    @available(*, deprecated, message: "use patch(_:parameters:as:) with a Decodable type, or the callback verb")
    public func patch(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("PATCH", urlString, parameters: parameters)
    }

    /// DELETE, awaited.
    @available(*, deprecated, message: "use delete(_:parameters:as:) with a Decodable type, or the callback verb")
    public func delete(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("DELETE", urlString, parameters: parameters)
    }

    /// POST of a multipart form, awaited: the parts are streamed from memory and files as
    /// the request is sent (see ``MultipartFormData``).
    @available(*, deprecated, message: "use post(_:parameters:constructingBodyWith:as:) with a Decodable type")
    public func post(_ urlString: String, parameters: [String: Any]? = nil,
                     constructingBodyWith block: (MultipartFormData) throws -> Void) async throws -> ResponseOutcome {
        try await perform(multipartRequest(urlString, parameters: parameters, body: block))
    }

    // MARK: - Typed

    /// Sends `method` to `urlString` with `parameters` serialized by the request serializer,
    /// and decodes the response into `T` with a ``DecodableResponseSerializer`` (status and
    /// content type validated first). `EmptyResponse` or an optional `T` accepts an empty body
    /// (a 204, a HEAD).
    ///
    /// - Throws: ``RequestSerializationError``, a transport `URLError`,
    ///   ``ResponseValidationError``, or ``ResponseSerializationError`` when the body does not
    ///   decode.
    public func send<T: Decodable & Sendable>(_ method: String, _ urlString: String, parameters: Any? = nil, as type: T.Type,
                                              decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await decoded(perform(makeRequest(method, urlString, parameters: parameters),
                                  serializer: DecodableResponseSerializer<T>(decoder: decoder)))
    }

    /// Sends `method` to `urlString` with `body` encoded as JSON (`Content-Type:
    /// application/json` unless the request serializer set another), and decodes the response
    /// into `T`. The manager's request serializer still sets the headers, timeout and
    /// authorization.
    ///
    /// - Throws: ``RequestSerializationError`` `.unencodableBody` when `body` does not encode;
    ///   otherwise as ``send(_:_:parameters:as:decoder:)``.
    public func send<Body: Encodable, T: Decodable & Sendable>(_ method: String, _ urlString: String, body: Body,
                                                                encoder: JSONEncoder = JSONEncoder(), as type: T.Type,
                                                                decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await decoded(perform(makeRequest(method, urlString, body: body, encoder: encoder),
                                  serializer: DecodableResponseSerializer<T>(decoder: decoder)))
    }

    /// GET, decoded into `T` with a ``DecodableResponseSerializer``.
    public func get<T: Decodable & Sendable>(_ urlString: String, parameters: Any? = nil, as type: T.Type,
                                             decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("GET", urlString, parameters: parameters, as: type, decoder: decoder)
    }

    /// HEAD, decoded into `T` (`EmptyResponse`, or an optional): the status and headers are
    /// validated, there is no body.
    public func head<T: Decodable & Sendable>(_ urlString: String, parameters: Any? = nil, as type: T.Type,
                                              decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("HEAD", urlString, parameters: parameters, as: type, decoder: decoder)
    }

    /// POST, decoded into `T`.
    public func post<T: Decodable & Sendable>(_ urlString: String, parameters: Any? = nil, as type: T.Type,
                                              decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("POST", urlString, parameters: parameters, as: type, decoder: decoder)
    }

    /// PUT, decoded into `T`.
    public func put<T: Decodable & Sendable>(_ urlString: String, parameters: Any? = nil, as type: T.Type,
                                             decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("PUT", urlString, parameters: parameters, as: type, decoder: decoder)
    }

    /// PATCH, decoded into `T`.
    public func patch<T: Decodable & Sendable>(_ urlString: String, parameters: Any? = nil, as type: T.Type,
                                               decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("PATCH", urlString, parameters: parameters, as: type, decoder: decoder)
    }

    /// DELETE, decoded into `T`.
    public func delete<T: Decodable & Sendable>(_ urlString: String, parameters: Any? = nil, as type: T.Type,
                                                decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("DELETE", urlString, parameters: parameters, as: type, decoder: decoder)
    }

    /// POST of an `Encodable` body as JSON, decoded into `T`.
    public func post<Body: Encodable, T: Decodable & Sendable>(_ urlString: String, body: Body, encoder: JSONEncoder = JSONEncoder(),
                                                                as type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("POST", urlString, body: body, encoder: encoder, as: type, decoder: decoder)
    }

    /// PUT of an `Encodable` body as JSON, decoded into `T`.
    public func put<Body: Encodable, T: Decodable & Sendable>(_ urlString: String, body: Body, encoder: JSONEncoder = JSONEncoder(),
                                                               as type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("PUT", urlString, body: body, encoder: encoder, as: type, decoder: decoder)
    }

    /// PATCH of an `Encodable` body as JSON, decoded into `T`.
    public func patch<Body: Encodable, T: Decodable & Sendable>(_ urlString: String, body: Body, encoder: JSONEncoder = JSONEncoder(),
                                                                 as type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await send("PATCH", urlString, body: body, encoder: encoder, as: type, decoder: decoder)
    }

    /// POST of a multipart form, decoded into `T`.
    public func post<T: Decodable & Sendable>(_ urlString: String, parameters: [String: Any]? = nil,
                                              constructingBodyWith block: (MultipartFormData) throws -> Void, as type: T.Type,
                                              decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await decoded(perform(multipartRequest(urlString, parameters: parameters, body: block),
                                  serializer: DecodableResponseSerializer<T>(decoder: decoder)))
    }

    /// The multipart POST request; `body` runs before this returns.
    private func multipartRequest(_ urlString: String, parameters: [String: Any]?,
                                  body: (MultipartFormData) throws -> Void) throws -> URLRequest {
        try withoutActuallyEscaping(body) { body in
            try makeRequest("POST", urlString, parameters: parameters, body: body)
        }
    }

    /// The request for `method` with `body` encoded as JSON.
    private func makeRequest<Body: Encodable>(_ method: String, _ urlString: String, body: Body,
                                              encoder: JSONEncoder) throws -> URLRequest {
        var request = try makeRequest(method, urlString, parameters: nil)
        do {
            request.httpBody = try encoder.encode(body)
        } catch {
            throw RequestSerializationError(.unencodableBody(detail: "\(error)"), underlying: error)
        }
        if request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    private func decoded<T: Decodable>(_ outcome: ResponseOutcome) throws -> T {
        // The response is built only for an error that reports it.
        try typedResponseObject(outcome.object, as: T.self, response: outcome.response, data: nil)
    }
}
