import Foundation
import HTTPTypes

/// A request body for the HTTPTypes door: bytes in memory, or written while the request runs.
///
/// Shaped like the Swift HTTP client API proposal's `HTTPClientRequestBody`:
///
/// ```swift
/// let body = HTTPRequestBody.restartable { writer in
///     for chunk in chunks { try await writer.write(chunk) }
///     return [.init("X-Checksum")!: checksum]   // trailer fields, or nil
/// }
/// try await manager.perform(request, body: body) { response, responseBody in
///     for try await chunk in responseBody { ... }   // read while the body is still written
/// }
/// ```
///
/// A written body is a ``StreamedRequestBody`` under the door: full duplex, with backpressure
/// both ways (see there). Its trailer fields go after a chunked body (HTTP/1.1, no
/// `knownLength`). libcurl sends no request trailers over HTTP/2: a request that went over
/// HTTP/2 and whose writer returned trailer fields fails with
/// `URLError(.requestBodyStreamExhausted)` rather than pass for one that carried them.
public struct HTTPRequestBody: Sendable {
    /// What is sent.
    enum Content: Sendable {
        case data(Data)
        /// Made into a ``StreamedRequestBody`` for each request it is attached to.
        case written(length: Int64?, restartable: Bool, StreamedRequestBody.Producer)
    }

    let content: Content

    /// `data`, sent with its length.
    public static func data(_ data: Data) -> HTTPRequestBody {
        HTTPRequestBody(content: .data(data))
    }

    /// A body `write` writes, from its first byte, each time the request sends it: once, and
    /// again for a 307 or 308 redirect or an authentication round (the earlier writer's next
    /// write throws `CancellationError`).
    ///
    /// The proposal's seekable bodies map here: the engine only ever restarts a body from
    /// offset 0.
    ///
    /// - Parameters:
    ///   - knownLength: The exact number of bytes `write` writes, sent as `Content-Length`;
    ///     nil sends the body chunked (over HTTP/1.1), which is what lets trailers follow it.
    ///     A writer that writes more or less fails the request with
    ///     `URLError(.requestBodyStreamExhausted)`.
    ///   - write: Writes the body and returns the trailer fields to send after it, or nil.
    public static func restartable(knownLength: Int64? = nil,
                                   _ write: @escaping @Sendable (RequestBodyWriter) async throws -> HTTPFields?) -> HTTPRequestBody {
        written(knownLength: knownLength, restartable: true, write)
    }

    /// A body that can be sent once only: a request that must send it again (a 307 or 308,
    /// an authentication round) fails with `URLError(.requestBodyStreamExhausted)`. For a
    /// source that cannot be read twice (a pipe, a live feed).
    public static func once(knownLength: Int64? = nil,
                            _ write: @escaping @Sendable (RequestBodyWriter) async throws -> HTTPFields?) -> HTTPRequestBody {
        written(knownLength: knownLength, restartable: false, write)
    }

    private static func written(knownLength: Int64?, restartable: Bool,
                                _ write: @escaping @Sendable (RequestBodyWriter) async throws -> HTTPFields?) -> HTTPRequestBody {
        HTTPRequestBody(content: .written(length: knownLength, restartable: restartable) { writer in
            (try await write(writer) ?? [:]).map { (name: $0.name.rawName, value: $0.value) }
        })
    }

    /// Puts the body in `request`.
    func attach(to request: inout URLRequest) {
        switch content {
        case .data(let data): request.httpBody = data
        case .written(let length, let restartable, let produce):
            request.httpBodyStream = StreamedRequestBody(length: length, restartable: restartable, producing: produce)
        }
    }
}
