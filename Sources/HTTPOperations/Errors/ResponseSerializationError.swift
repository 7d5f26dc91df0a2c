import Foundation

/// A response that passed validation but whose body could not be turned into an object.
public struct ResponseSerializationError: Error, Sendable, CustomStringConvertible {
    /// The kinds of ``ResponseSerializationError``.
    public typealias Code = ErrorCode<ResponseSerializationError>

    /// Why decoding failed, with the parser's words. Compare ``code`` with the static members
    /// of ``ErrorCode``; read ``detail`` and ``underlyingErrors`` for the rest.
    public struct Reason: Sendable {
        enum Kind: Sendable {
            case invalidJSON(detail: String)
            case invalidPropertyList(detail: String)
            case invalidXML(detail: String)
            case unreadableImage
            case decodingFailed(detail: String)
            case emptyBody
            case noSerializerAccepted([any Error])
        }

        let kind: Kind

        /// The body was not JSON; `detail` is the parser's message.
        public static func invalidJSON(detail: String) -> Reason { Reason(kind: .invalidJSON(detail: detail)) }
        /// The body was not a property list.
        public static func invalidPropertyList(detail: String) -> Reason { Reason(kind: .invalidPropertyList(detail: detail)) }
        /// The body was not well-formed XML.
        public static func invalidXML(detail: String) -> Reason { Reason(kind: .invalidXML(detail: detail)) }
        /// The body was not an image of a format this library reads.
        public static var unreadableImage: Reason { Reason(kind: .unreadableImage) }
        /// A `Decodable` value could not be decoded from the body.
        public static func decodingFailed(detail: String) -> Reason { Reason(kind: .decodingFailed(detail: detail)) }
        /// The body was empty where a value was required.
        public static var emptyBody: Reason { Reason(kind: .emptyBody) }
        /// No serializer of a compound serializer accepted the response; each one's error.
        public static func noSerializerAccepted(_ errors: [any Error]) -> Reason { Reason(kind: .noSerializerAccepted(errors)) }

        /// The kind.
        public var code: Code {
            switch kind {
            case .invalidJSON: .invalidJSON
            case .invalidPropertyList: .invalidPropertyList
            case .invalidXML: .invalidXML
            case .unreadableImage: .unreadableImage
            case .decodingFailed: .decodingFailed
            case .emptyBody: .emptyBody
            case .noSerializerAccepted: .noSerializerAccepted
            }
        }

        /// The parser's or decoder's message, when there is one.
        public var detail: String? {
            switch kind {
            case .invalidJSON(let detail), .invalidPropertyList(let detail), .invalidXML(let detail),
                 .decodingFailed(let detail): detail
            case .unreadableImage, .emptyBody, .noSerializerAccepted: nil
            }
        }

        /// Each serializer's error, for `.noSerializerAccepted`; empty otherwise.
        public var underlyingErrors: [any Error] {
            if case .noSerializerAccepted(let errors) = kind { return errors }
            return []
        }
    }

    /// Why decoding failed.
    public let reason: Reason
    /// The response whose body it was.
    public let response: URLResponse?
    /// The body.
    public let data: Data?
    /// The parser's or decoder's own error (a `DecodingError`, an `NSError` of
    /// `JSONSerialization`), when there is one.
    public let underlying: (any Error)?

    /// The kind of failure: `reason.code`.
    public var code: Code { reason.code }

    /// Creates an error.
    public init(_ reason: Reason, response: URLResponse?, data: Data?, underlying: (any Error)? = nil) {
        self.reason = reason
        self.response = response
        self.data = data
        self.underlying = underlying
    }

    public var description: String {
        let url = response?.url?.absoluteString ?? "(no URL)"
        switch reason.kind {
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

extension ErrorCode where Domain == ResponseSerializationError {
    /// See ``ResponseSerializationError/Reason/invalidJSON(detail:)``.
    public static var invalidJSON: Self { Self("invalidJSON") }
    /// See ``ResponseSerializationError/Reason/invalidPropertyList(detail:)``.
    public static var invalidPropertyList: Self { Self("invalidPropertyList") }
    /// See ``ResponseSerializationError/Reason/invalidXML(detail:)``.
    public static var invalidXML: Self { Self("invalidXML") }
    /// See ``ResponseSerializationError/Reason/unreadableImage``.
    public static var unreadableImage: Self { Self("unreadableImage") }
    /// See ``ResponseSerializationError/Reason/decodingFailed(detail:)``.
    public static var decodingFailed: Self { Self("decodingFailed") }
    /// See ``ResponseSerializationError/Reason/emptyBody``.
    public static var emptyBody: Self { Self("emptyBody") }
    /// See ``ResponseSerializationError/Reason/noSerializerAccepted(_:)``.
    public static var noSerializerAccepted: Self { Self("noSerializerAccepted") }
}
