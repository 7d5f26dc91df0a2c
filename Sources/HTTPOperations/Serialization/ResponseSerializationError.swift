import Foundation

/// A response that passed validation but whose body could not be turned into an object.
public struct ResponseSerializationError: Error, Sendable, CustomStringConvertible {
    /// Why decoding failed.
    public enum Reason: Sendable {
        /// The body was not JSON; `detail` is the parser's message.
        case invalidJSON(detail: String)
        /// The body was not a property list.
        case invalidPropertyList(detail: String)
        /// The body was not well-formed XML.
        case invalidXML(detail: String)
        /// The body was not an image of a format this library reads.
        case unreadableImage
        /// A `Decodable` value could not be decoded from the body.
        case decodingFailed(detail: String)
        /// The body was empty where a value was required.
        case emptyBody
        /// No serializer of a compound serializer accepted the response; each one's error.
        case noSerializerAccepted([any Error])
    }

    /// Why decoding failed.
    public let reason: Reason
    /// The response whose body it was.
    public let response: URLResponse?
    /// The body.
    public let data: Data?

    /// Creates an error.
    public init(_ reason: Reason, response: URLResponse?, data: Data?) {
        self.reason = reason
        self.response = response
        self.data = data
    }

    public var description: String {
        let url = response?.url?.absoluteString ?? "(no URL)"
        switch reason {
        case .invalidJSON(let detail): return "The response from \(url) is not valid JSON: \(detail)"
        case .invalidPropertyList(let detail): return "The response from \(url) is not a valid property list: \(detail)"
        case .invalidXML(let detail): return "The response from \(url) is not well-formed XML: \(detail)"
        case .unreadableImage: return "The response from \(url) is not an image this library can read."
        case .decodingFailed(let detail): return "The response from \(url) did not decode: \(detail)"
        case .emptyBody: return "The response from \(url) has an empty body where a value was required."
        case .noSerializerAccepted(let errors):
            return "No serializer accepted the response from \(url): " + errors.map { "\($0)" }.joined(separator: "; ")
        }
    }
}
