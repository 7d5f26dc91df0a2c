import Foundation

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
        try await outcome(startingWith: {}, reading: { try $0.typedValue(as: Value.self) })
    }

    /// The operation's error, or what its serializer made as a `Value`. The Foundation response
    /// is built only for an error that reports it: building one is a costly part of an awaited
    /// small request (Docs/Performance.md, "The async doors").
    func typedValue<Value>(as type: Value.Type) throws -> Value {
        if let error { throw error }
        return try typedResponseObject(responseObject, as: type, response: response, data: responseData)
    }

    /// Waits for the outcome after `start` ran, with the observer already in place (so an
    /// outcome that comes at once is not missed, and no task is needed to wait beside it), and
    /// returns what `read` makes of the finished operation, read on the thread that announced
    /// the outcome. Nothing here holds the operation once `read` returned.
    func outcome<Value: Sendable>(startingWith start: () -> Void,
                                  reading read: @escaping @Sendable (HTTPRequestOperation) throws -> Value) async throws -> Value {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                // Outcome observers run exactly once, so the continuation resumes exactly once.
                whenOutcomeKnown { operation in
                    continuation.resume(with: Result { try read(operation as! HTTPRequestOperation) })
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
    /// Enqueues `operation` and returns what its response serializer made, as a `Value` (see
    /// ``HTTPRequestOperation/outcome(as:)``); cancelling the task cancels it.
    public func run<Value: Sendable>(_ operation: HTTPRequestOperation, as type: Value.Type) async throws -> Value {
        try await enqueueAndAwait(operation) { try $0.typedValue(as: Value.self) }
    }

    /// Enqueues `operation` once its observer is in place, in the awaiting task (an
    /// unstructured task per request to wait beside it would cost more than the wait itself),
    /// and returns what `read` makes of it once finished.
    func enqueueAndAwait<Value: Sendable>(_ operation: HTTPRequestOperation,
                                          reading read: @escaping @Sendable (HTTPRequestOperation) throws -> Value) async throws -> Value {
        try await operation.outcome(startingWith: { self.enqueue(operation) }, reading: read)
    }

    /// Runs `request` with the manager's settings and `serializer`, and returns its value as a `T`.
    private func perform<T: Decodable & Sendable>(_ request: URLRequest, serializer: DecodableResponseSerializer<T>,
                                                  as type: T.Type) async throws -> T {
        let operation = httpRequestOperation(with: request, success: nil, failure: nil)
        operation.setResponseSerializer(ChosenResponseSerializer(own: serializer))
        return try await run(operation, as: type)
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
        let serializer = method.uppercased() == "HEAD" ? DecodableResponseSerializer<T>.answeringHead(decoder: decoder)
            : DecodableResponseSerializer<T>(decoder: decoder)
        return try await perform(makeRequest(method, urlString, parameters: parameters), serializer: serializer, as: type)
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
        try await perform(makeRequest(method, urlString, body: body, encoder: encoder),
                          serializer: DecodableResponseSerializer<T>(decoder: decoder), as: type)
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
        try await perform(multipartRequest(urlString, parameters: parameters, body: block),
                          serializer: DecodableResponseSerializer<T>(decoder: decoder), as: type)
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
}
