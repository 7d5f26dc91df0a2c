import Foundation

/// Turns a request and parameters into the request to send: a query string, a body, headers.
///
/// Implementations must be safe to call from several threads at once.
public protocol URLRequestSerialization: Sendable {
    /// `request` with `parameters` encoded into it.
    ///
    /// - Throws: ``RequestSerializationError`` when the parameters cannot be encoded.
    func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest
}
