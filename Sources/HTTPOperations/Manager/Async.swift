import Foundation

/// A response and what the response serializer made of it, for async callers.
public struct ResponseOutcome: @unchecked Sendable {
    // @unchecked Sendable: `object` is whatever the serializer made (JSON is `Any`); it is
    // handed over whole to the awaiting task and never touched by the library again.

    /// The HTTP response.
    public let response: HTTPURLResponse?
    /// The serialized object.
    public let object: Any?
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
    public func outcome() async throws -> ResponseOutcome {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ResponseOutcome, any Error>) in
                // Outcome observers run exactly once, so the continuation resumes exactly once.
                whenOutcomeKnown { operation in
                    let operation = operation as! HTTPRequestOperation
                    if let error = operation.error {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume(returning: ResponseOutcome(response: operation.response, object: operation.responseObject))
                    }
                }
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
    public func run(_ operation: HTTPRequestOperation) async throws -> ResponseOutcome {
        let outcome = Task { try await operation.outcome() }
        enqueue(operation)
        return try await withTaskCancellationHandler {
            try await outcome.value
        } onCancel: {
            operation.cancel()
        }
    }

    private func perform(_ method: String, _ urlString: String, parameters: Any?,
                         serializer: (any URLResponseSerialization)? = nil) async throws -> ResponseOutcome {
        let request = try makeRequest(method, urlString, parameters: parameters)
        let operation = httpRequestOperation(with: request, success: nil, failure: nil)
        if let serializer { operation.responseSerializer = serializer }
        return try await run(operation)
    }

    /// GET, awaited: the response and the serialized object.
    public func get(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("GET", urlString, parameters: parameters)
    }

    /// HEAD, awaited.
    public func head(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("HEAD", urlString, parameters: parameters)
    }

    /// POST, awaited.
    public func post(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("POST", urlString, parameters: parameters)
    }

    /// PUT, awaited.
    public func put(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("PUT", urlString, parameters: parameters)
    }

    /// PATCH, awaited.
    public func patch(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("PATCH", urlString, parameters: parameters)
    }

    /// DELETE, awaited.
    public func delete(_ urlString: String, parameters: Any? = nil) async throws -> ResponseOutcome {
        try await perform("DELETE", urlString, parameters: parameters)
    }

    /// GET, decoded into `T` with a ``DecodableResponseSerializer``.
    public func get<T: Decodable & Sendable>(_ urlString: String, parameters: Any? = nil, as type: T.Type,
                                             decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await decoded(perform("GET", urlString, parameters: parameters, serializer: DecodableResponseSerializer<T>(decoder: decoder)))
    }

    /// POST, decoded into `T`.
    public func post<T: Decodable & Sendable>(_ urlString: String, parameters: Any? = nil, as type: T.Type,
                                              decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await decoded(perform("POST", urlString, parameters: parameters, serializer: DecodableResponseSerializer<T>(decoder: decoder)))
    }

    private func decoded<T: Decodable>(_ outcome: ResponseOutcome) throws -> T {
        try DecodableResponseSerializer<T>.typed(outcome.object, response: outcome.response, data: nil)
    }
}
