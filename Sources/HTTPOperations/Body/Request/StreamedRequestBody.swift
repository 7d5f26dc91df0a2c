import Foundation

/// A request body written while the request runs: full duplex, with backpressure both ways.
///
/// Set it as a request's `httpBodyStream` (or give the HTTPTypes door an ``HTTPRequestBody``,
/// which makes one). When the transfer needs the body, its `write` closure runs in a task of
/// its own with a ``RequestBodyWriter``; each chunk it writes goes to the server as soon as
/// curl can send it, while the response, read at the same time, streams back:
///
/// ```swift
/// var request = URLRequest(url: url)
/// request.httpMethod = "POST"
/// request.httpBodyStream = StreamedRequestBody { writer in
///     for line in lines { try await writer.write(Data(line.utf8)) }
/// }
/// ```
///
/// - Backpressure, writer side: ``RequestBodyWriter/write(_:)`` suspends while 256 KiB
///   written are still waiting for curl, so a fast writer never fills memory.
/// - Backpressure, curl side: while nothing is written, the transfer's sending is paused
///   (`CURL_READFUNC_PAUSE`), not polled, and resumes when the next chunk arrives.
/// - Length: without `length` the body goes chunked (HTTP/1.1) or as DATA frames (HTTP/2);
///   trailers, from `setRequestTrailersBlock`, follow it over HTTP/1.1. With `length`, it is
///   the `Content-Length`, and a writer that writes more or less fails the request with
///   `URLError(.requestBodyStreamExhausted)` instead of sending a body that lies.
/// - Sent again: a 307 or 308, or an authentication round, needs the body a second time. A
///   restartable body (the default) runs `write` again from the start, with a new writer; the
///   old writer's next `write` throws `CancellationError`. A body made with
///   `restartable: false` fails such a request with `URLError(.requestBodyStreamExhausted)`.
/// - Failure: what `write` throws fails the request with `URLError(.requestBodyStreamExhausted)`,
///   the thrown error as its `NSUnderlyingErrorKey`. A request that ends (cancelled, failed,
///   answered early) cancels the writer's task: its next `write` throws.
///
/// It is an `InputStream` so that it travels in a `URLRequest` like any body stream, but
/// only the transfer reads it: its own `read(_:maxLength:)` fails.
///
/// Thread-safety: immutable after `init` (Foundation makes every `InputStream` non-Sendable;
/// a request carries it to the network thread like any body stream).
public final class StreamedRequestBody: InputStream, RewindableBodyStream {
    /// What the writer produces: the trailer fields to send after the body (none from the
    /// operation door's closure; the HTTPTypes door's body may return some).
    typealias Producer = @Sendable (RequestBodyWriter) async throws -> [(name: String, value: String)]

    /// The body's exact length, sent as its `Content-Length`; nil to send it chunked.
    public let length: Int64?
    /// Whether `write` may run again to send the body a second time (a 307 or 308 redirect,
    /// an authentication round).
    public let isRestartable: Bool
    /// Runs once for each time the body is sent.
    let produce: Producer

    /// A body that `write` writes each time the request sends it.
    ///
    /// - Parameters:
    ///   - length: The exact number of bytes `write` writes, or nil to send the body chunked.
    ///   - restartable: Whether `write` may run again when the body must be sent again.
    ///   - write: Writes the body; runs in a task of its own, once per send.
    public convenience init(length: Int64? = nil, restartable: Bool = true,
                            _ write: @escaping @Sendable (RequestBodyWriter) async throws -> Void) {
        self.init(length: length, restartable: restartable, producing: { writer in
            try await write(writer)
            return []
        })
    }

    /// A body whose writer also gives the trailer fields (the HTTPTypes door's bodies).
    init(length: Int64?, restartable: Bool, producing: @escaping Producer) {
        self.length = length
        self.isRestartable = restartable
        self.produce = producing
        super.init(data: Data())
    }

    /// No limit: the body goes as fast as its writer writes it.
    public var maximumSendRate: Int64? { nil }

    /// Whether the body can be sent again: the transfer runs `write` once more.
    public func rewind() -> Bool { isRestartable }

    public override var hasBytesAvailable: Bool { false }
    public override var streamStatus: Stream.Status { .error }
    public override var streamError: (any Error)? {
        URLError(.requestBodyStreamExhausted, url: nil,
                 description: "A StreamedRequestBody is written by its closure and read by the transfer only.")
    }
    public override func open() {}
    public override func close() {}
    /// Fails: only the transfer reads this body, through its writer.
    public override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int { -1 }
}

extension InputStream {
    /// Whether a transfer can send this body once more (after a 307 or 308): a
    /// ``RewindableBodyStream`` can, unless it is a ``StreamedRequestBody`` made one-shot.
    /// Asked without running user code.
    var canBeSentAgain: Bool {
        if let written = self as? StreamedRequestBody { return written.isRestartable }
        return self is RewindableBodyStream
    }
}
