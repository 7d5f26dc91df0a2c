import Foundation

/// Hears an informational (1xx) response that came before the answer: 100 Continue, 103
/// Early Hints. It is never the answer, and nothing can be done to the transfer from it.
public typealias InformationalResponseBlock = @Sendable (_ operation: URLConnectionOperation, _ response: HTTPURLResponse) -> Void

/// What comes around the answer: informational responses before it, trailer fields after its
/// body.
extension URLConnectionOperation {
    /// Sets the block told of each informational (1xx) response that arrives before the
    /// answer (100 Continue, 103 Early Hints). Runs on ``completionQueue``, in order and
    /// before the outcome: an operation with this block gets a serial queue targeting it.
    /// Set it before the operation starts; the operation reads its settings then.
    public func setInformationalResponseBlock(_ block: InformationalResponseBlock?) {
        changeSettings("informationalResponseBlock") { $0.informationalBlock = block }
    }

    /// The trailer fields that followed the final response's body (a chunked body's trailer
    /// section, HTTP/2's trailing HEADERS), as received; empty when there were none. Known
    /// once the operation finished (for a ``ResponseBodyStream``: once its loop ended).
    /// Fields of an answer that failed are not kept.
    public var responseTrailerFields: [(name: String, value: String)] {
        state.withLock { $0.responseTrailers?.fields ?? [] }
    }
}

extension URLConnectionOperation {
    /// Sets the block that gives the request's trailer fields, sent after its body. Only a
    /// body read from the request's `httpBodyStream` without a `Content-Length` is sent chunked
    /// and so can carry trailers; announce them with a `Trailer` header field. libcurl sends
    /// request trailers only after a chunked HTTP/1.1 body, so such a request goes over
    /// HTTP/1.1 even to an origin that offers HTTP/2.
    /// Called on the body's reader queue once the stream ended, once per transfer that sends
    /// the body. A field whose name is not a token, or whose value holds CR, LF or NUL, fails
    /// the operation before the trailer section is sent.
    public func setRequestTrailersBlock(_ block: RequestTrailersBlock?) {
        changeSettings("requestTrailersBlock") { $0.requestTrailers = block }
    }
}
