import Foundation
import HTTPTypes
import HTTPTypesFoundation

/// The swift-http-types door: an `HTTPRequest` in, an `HTTPResponse` out, as the Swift HTTP
/// client API proposal shapes it. One engine, two doors: under it is the same
/// ``HTTPRequestOperation``, enqueued on the same queue, with the manager's security policy,
/// route, cookies, credential, timeouts, retry policy, metrics, logging and tracing.
///
/// What differs from the AFNetworking-style door is what counts as an answer: every status
/// is one (a 404 is a response, not an error), and the body is the bytes that came, whatever
/// their content type. And the request is sent as given: the manager's request serializer
/// (its default header fields, its `timeoutInterval`) is not applied; its `totalTimeout` is. Errors are what prevents an answer: a request that cannot be sent, a
/// transport or TLS failure, a cancellation, a body the server cut short.
///
/// See Docs/HTTPTypesDoor.md for the mapping, type by type, and how it becomes the proposal's
/// `HTTPClient` once the toolchain can build it.
extension HTTPRequestOperationManager {
    /// Performs `request` and collects the response body.
    ///
    /// ```swift
    /// let request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/status")
    /// let (response, body) = try await manager.perform(request, collectUpTo: 1 << 20)
    /// if response.status == .ok { ... }
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request. Without a scheme and authority, its path is resolved against
    ///     ``baseURL``.
    ///   - body: The request body, if any: `.data(…)`, or one written while the request runs
    ///     (see ``HTTPRequestBody``).
    ///   - limit: The most body bytes to collect, decoded, whatever the status. A larger body
    ///     fails the request with ``TransferError`` `.bodyTooLarge`: on the wire as soon as its
    ///     length is known (from `Content-Length`, or once the bytes that came pass it),
    ///     without collecting the rest; an answer from the cache once read. At most the
    ///     operation's own ``URLConnectionOperation/maximumBodySize`` (512 MiB unless the
    ///     manager's `operationFactory` set another), which nil leaves as it is.
    /// - Returns: The final response (after redirects the manager follows) and its body.
    /// - Throws: ``RequestSerializationError`` when the request names no URL; otherwise the
    ///   operation's error (`URLError`, ``SecurityError``, ``TransferError``, …).
    public func perform(_ request: HTTPRequest, body: HTTPRequestBody? = nil,
                        collectUpTo limit: Int? = nil) async throws -> (response: HTTPResponse, body: Data) {
        try await collect(operation(for: request, body: body), upTo: limit)
    }

    /// Performs `request` and hands the response to `responseHandler` as soon as its head
    /// arrived, with its body as it comes (a `for try await` loop gets each chunk as curl
    /// delivers it, with backpressure: a slow loop pauses the transfer).
    ///
    /// ```swift
    /// let count = try await manager.perform(request) { response, body in
    ///     var lines = 0
    ///     for try await chunk in body { lines += chunk.filter { $0 == 0x0A }.count }
    ///     return lines
    /// }
    /// ```
    ///
    /// With a body written while the response streams in (see ``HTTPRequestBody``), this is
    /// full duplex: the handler gets the response as soon as its head arrived, which may be
    /// before the body is all written.
    ///
    /// ```swift
    /// let body = HTTPRequestBody.restartable { writer in
    ///     for message in outgoing { try await writer.write(message) }
    ///     return nil
    /// }
    /// try await manager.perform(request, body: body) { response, responseBody in
    ///     for try await reply in responseBody { handle(reply) }
    /// }
    /// ```
    ///
    /// The body need not be read to its end: when the handler returns (or throws) with some of
    /// it unread, the transfer is cancelled. Cancelling the task cancels it too.
    ///
    /// - Returns: What `responseHandler` returned.
    /// - Throws: The errors of ``perform(_:body:collectUpTo:)`` that come before the head, what
    ///   the handler throws, and, from the body's loop, a failure after the head (a truncated
    ///   body).
    public func perform<Result: Sendable>(_ request: HTTPRequest, body: HTTPRequestBody? = nil,
                                          responseHandler: (HTTPResponse, ResponseBodyStream) async throws -> Result)
        async throws -> Result {
        try await streaming(operation(for: request, body: body), to: responseHandler)
    }

    /// Runs `operation` and hands its response, once the head arrived, and its body as it
    /// comes to `responseHandler`.
    private func streaming<Result: Sendable>(_ operation: HTTPRequestOperation,
                                             to responseHandler: (HTTPResponse, ResponseBodyStream) async throws -> Result)
        async throws -> Result {
        let stream = ResponseBodyStream(operation)
        enqueue(operation)
        guard let head = try await stream.responseHead() else {
            throw URLError(.badServerResponse, url: operation.request.url, description: "The answer had no HTTP head.")
        }
        return try await responseHandler(head.httpResponse, stream)
    }

    /// Runs `operation`, collecting at most `limit` body bytes, and returns its response and body.
    private func collect(_ operation: HTTPRequestOperation, upTo limit: Int?) async throws -> (response: HTTPResponse, body: Data) {
        let limit = limit.map { max(0, $0) }
        if let limit { operation.maximumBodySize = min(Int64(limit), operation.maximumBodySize ?? .max) }
        try await enqueueAndAwait(operation) { if let error = $0.error { throw error } }
        guard let response = operation.httpResponse else {
            // Every HTTP transfer that succeeded has a head; only a scheme without one lacks it.
            throw URLError(.badServerResponse, url: operation.request.url, description: "The answer had no HTTP head.")
        }
        let body = operation.responseData ?? Data()
        // A body that never met the transfer's limit: an answer from the cache, or one held
        // aside (a redirect the block refused, a retryable status whose wait is too long).
        if let limit, body.count > limit {
            throw TransferError(.bodyTooLarge, url: operation.request.url,
                                detail: "The response body (\(body.count) bytes) is larger than collectUpTo (\(limit) bytes)")
        }
        return (response, body)
    }

    /// Performs `request` and decodes the response body as JSON into `type`, whatever the
    /// status (check `response.status`: an error answer's body is decoded too). The request,
    /// its body and the limit are as for ``perform(_:body:collectUpTo:)``; `decoder` decodes.
    ///
    /// - Throws: ``ResponseSerializationError`` `.decodingFailed` when the body is not a
    ///   `Value`, besides the errors of ``perform(_:body:collectUpTo:)``.
    public func perform<Value: Decodable & Sendable>(_ request: HTTPRequest, body: HTTPRequestBody? = nil,
                                                     decoding type: Value.Type, using decoder: JSONDecoder = JSONDecoder(),
                                                     collectUpTo limit: Int? = nil)
        async throws -> (response: HTTPResponse, value: Value) {
        let operation = try operation(for: request, body: body)
        let (response, data) = try await collect(operation, upTo: limit)
        if data.isEmpty, let value = emptyBodyValue(as: Value.self, status: response.status.code, answersHead: request.method == .head) {
            return (response, value)
        }
        do {
            return (response, try decoder.decode(type, from: data))
        } catch {
            throw ResponseSerializationError(.decodingFailed(detail: "\(error)"), response: operation.response, data: data, underlying: error)
        }
    }

    /// An operation for `request`, configured like ``httpRequestOperation(with:success:failure:)``
    /// (add dependencies, pause it, subclass the factory) but answering as this door does:
    /// every status is a response, every content type a body. Read ``HTTPRequestOperation/httpResponse``
    /// once it finished. The request and its body are as for ``perform(_:body:collectUpTo:)``.
    ///
    /// - Throws: ``RequestSerializationError`` `.invalidURL` when `request` names no URL and
    ///   the manager has no ``baseURL`` to resolve its path against.
    public func httpRequestOperation(for request: HTTPRequest, body: HTTPRequestBody? = nil) throws -> HTTPRequestOperation {
        try operation(for: request, body: body)
    }

    /// The door's operation for `request` and `body`.
    private func operation(for request: HTTPRequest, body: HTTPRequestBody?) throws -> HTTPRequestOperation {
        var urlRequest = try urlRequest(for: request)
        body?.attach(to: &urlRequest)
        let operation = httpRequestOperation(with: urlRequest, success: nil, failure: nil)
        operation.setResponseSerializer(Self.everyAnswer)
        operation.answerEveryStatus()
        return operation
    }

    /// A serializer that takes every status and content type: the HTTPTypes door's caller
    /// reads the status itself.
    private static let everyAnswer: ChosenResponseSerializer = {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableStatusCodes = IndexSet(integersIn: 100..<1000)
        return ChosenResponseSerializer(own: serializer)
    }()

    /// Whether `path` is a request target in origin-form (RFC 9112 §3.2.1: starting with
    /// `/`), or `*` for OPTIONS (asterisk-form). A path alone, resolved against the base URL,
    /// must not start with `//`, which would name another authority; with the request's own
    /// `authority`, `//a` is a path with an empty first segment.
    static func isOriginForm(_ path: String, method: HTTPRequest.Method, authority: String?) -> Bool {
        if path == "*" { return method == .options }
        return path.hasPrefix("/") && (authority != nil || !path.hasPrefix("//"))
    }

    /// `request` as Foundation's request: its URL (or its path against ``baseURL``), method
    /// and header fields (repeated fields joined with `, `, cookies with `; `).
    ///
    /// - Throws: ``RequestSerializationError`` `.invalidURL` for a path that is not
    ///   origin-form (`/…`; `*` for OPTIONS): an absolute URL or `//host` there would send the
    ///   request to another origin than the one it names; `.unencodableHeaderValue` for a
    ///   value whose bytes are not UTF-8, which no header string carries as they are.
    func urlRequest(for request: HTTPRequest) throws -> URLRequest {
        if let path = request.path, !Self.isOriginForm(path, method: request.method, authority: request.authority) {
            throw RequestSerializationError(.invalidURL(path))
        }
        if let field = request.headerFields.first(where: { !$0.valueIsUTF8 }) {
            throw RequestSerializationError(.unencodableHeaderValue(name: field.name.rawName))
        }
        if let converted = URLRequest(sending: request) { return converted }
        // A path alone, resolved against the base URL as the manager's verbs resolve theirs.
        // Not `//host/...`: that would name another origin.
        guard request.scheme == nil, request.authority == nil, let path = request.path, !path.hasPrefix("//"),
              let baseURL, let url = URL(string: path, relativeTo: baseURL)?.absoluteURL else {
            throw RequestSerializationError(.invalidURL(request.path ?? ""))
        }
        var absolute = request
        // HTTPTypes' own setter: the path keeps its percent-encoding, the authority its port
        // and IPv6 brackets, the query its place.
        absolute.url = url
        guard let converted = URLRequest(sending: absolute) else {
            throw RequestSerializationError(.invalidURL(path))
        }
        return converted
    }
}
