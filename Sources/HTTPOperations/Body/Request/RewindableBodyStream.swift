import Foundation

/// A request-body stream that can start again from its first byte, and may ask for a send
/// rate. curl rewinds bodies when it must send them again (an authentication round, a 307 or
/// 308 redirect, a retried connection); a plain `InputStream` cannot, so such a request fails
/// with `URLError(.requestBodyStreamExhausted)`, while a stream with this conformance is sent
/// again.
public protocol RewindableBodyStream: AnyObject {
    /// Moves back to the first byte. Returns false when that is not possible.
    func rewind() -> Bool
    /// The highest rate, in bytes per second, at which the body should be sent; nil for no
    /// limit. (Throttling is done by curl, so the network thread never waits.)
    var maximumSendRate: Int64? { get }
}
