import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns a response and its body into an object: validation and decoding in one step.
///
/// Implementations run on an operation's completion queue, never on the network thread,
/// and must be safe to call from several queues at once.
public protocol URLResponseSerialization: Sendable {
    /// The object for `response` and `data`, or nil when there is none.
    ///
    /// - Parameters:
    ///   - response: The response, nil when the transfer failed before one arrived.
    ///   - data: The body, nil when it was streamed elsewhere.
    /// - Returns: The decoded object, or nil.
    /// - Throws: A validation or decoding error; the operation then fails with it.
    func responseObject(for response: URLResponse?, data: Data?) throws -> Any?
}
