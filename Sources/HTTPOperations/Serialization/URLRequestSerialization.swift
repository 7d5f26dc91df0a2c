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

/// A request that could not be built; nothing was sent.
public struct RequestSerializationError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable {
        /// The URL string does not parse.
        case invalidURL(String)
        /// The parameters cannot be written as JSON.
        case invalidJSONObject
        /// The parameters cannot be written as a property list.
        case invalidPropertyList(detail: String)
        /// The custom query-string block threw.
        case queryStringFailed(detail: String)
        /// A multipart part's file cannot be read.
        case unreadableFile(URL, detail: String)
        /// A string cannot be represented in the serializer's string encoding.
        case unencodableString
    }

    /// What went wrong.
    public let reason: Reason
    /// The underlying error, when there was one.
    public let underlying: (any Error)?

    /// Creates an error.
    public init(_ reason: Reason, underlying: (any Error)? = nil) {
        self.reason = reason
        self.underlying = underlying
    }

    public var description: String {
        switch reason {
        case .invalidURL(let string): "'\(string)' is not a valid URL."
        case .invalidJSONObject: "The parameters cannot be written as JSON."
        case .invalidPropertyList(let detail): "The parameters cannot be written as a property list: \(detail)"
        case .queryStringFailed(let detail): "The query-string block failed: \(detail)"
        case .unreadableFile(let url, let detail): "Cannot read \(url.path) for a multipart body: \(detail)"
        case .unencodableString: "A string cannot be represented in the serializer's string encoding."
        }
    }
}
