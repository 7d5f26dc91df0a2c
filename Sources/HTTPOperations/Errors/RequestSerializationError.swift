import Foundation

/// A request that could not be built; nothing was sent.
public struct RequestSerializationError: Error, Sendable, CustomStringConvertible {
    /// The kinds of ``RequestSerializationError``.
    public typealias Code = ErrorCode<RequestSerializationError>

    /// What went wrong, with its values. Compare with the static members, or compare
    /// ``code`` to ignore the values.
    public struct Reason: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case invalidURL(String)
            case invalidJSONObject
            case invalidPropertyList(detail: String)
            case queryStringFailed(detail: String)
            case unreadableFile(URL, detail: String)
            case unencodableString
            case unencodableBody(detail: String)
            case unencodableHeaderValue(name: String)
        }

        let kind: Kind

        /// The URL string does not parse.
        public static func invalidURL(_ string: String) -> Reason { Reason(kind: .invalidURL(string)) }
        /// The parameters cannot be written as JSON.
        public static var invalidJSONObject: Reason { Reason(kind: .invalidJSONObject) }
        /// The parameters cannot be written as a property list.
        public static func invalidPropertyList(detail: String) -> Reason { Reason(kind: .invalidPropertyList(detail: detail)) }
        /// The custom query-string block threw.
        public static func queryStringFailed(detail: String) -> Reason { Reason(kind: .queryStringFailed(detail: detail)) }
        /// A multipart part's file cannot be read.
        public static func unreadableFile(_ url: URL, detail: String) -> Reason { Reason(kind: .unreadableFile(url, detail: detail)) }
        /// A string cannot be represented in the serializer's string encoding.
        public static var unencodableString: Reason { Reason(kind: .unencodableString) }
        /// An `Encodable` body could not be encoded.
        public static func unencodableBody(detail: String) -> Reason { Reason(kind: .unencodableBody(detail: detail)) }
        /// A header field's value (the HTTPTypes door's `HTTPField`) holds bytes that are not
        /// UTF-8: the transport carries values as text, which cannot hold them as they are.
        public static func unencodableHeaderValue(name: String) -> Reason { Reason(kind: .unencodableHeaderValue(name: name)) }

        /// The kind, without the values.
        public var code: Code {
            switch kind {
            case .invalidURL: .invalidURL
            case .invalidJSONObject: .invalidJSONObject
            case .invalidPropertyList: .invalidPropertyList
            case .queryStringFailed: .queryStringFailed
            case .unreadableFile: .unreadableFile
            case .unencodableString: .unencodableString
            case .unencodableBody: .unencodableBody
            case .unencodableHeaderValue: .unencodableHeaderValue
            }
        }
    }

    /// What went wrong.
    public let reason: Reason
    /// The underlying error, when there was one.
    public let underlying: (any Error)?

    /// The kind of failure: `reason.code`.
    public var code: Code { reason.code }

    /// Creates an error.
    public init(_ reason: Reason, underlying: (any Error)? = nil) {
        self.reason = reason
        self.underlying = underlying
    }

    public var description: String {
        switch reason.kind {
        case .invalidURL(let string): "'\(string)' is not a valid URL."
        case .invalidJSONObject: "The parameters cannot be written as JSON."
        case .invalidPropertyList(let detail): "The parameters cannot be written as a property list: \(detail)"
        case .queryStringFailed(let detail): "The query-string block failed: \(detail)"
        case .unreadableFile(let url, let detail): "Cannot read \(url.path) for a multipart body: \(detail)"
        case .unencodableString: "A string cannot be represented in the serializer's string encoding."
        case .unencodableBody(let detail): "The request body cannot be encoded: \(detail)"
        case .unencodableHeaderValue(let name): "The value of the header field \(name) is not UTF-8; nothing was sent"
        }
    }
}

extension ErrorCode where Domain == RequestSerializationError {
    /// See ``RequestSerializationError/Reason/invalidURL(_:)``.
    public static var invalidURL: Self { Self("invalidURL") }
    /// See ``RequestSerializationError/Reason/invalidJSONObject``.
    public static var invalidJSONObject: Self { Self("invalidJSONObject") }
    /// See ``RequestSerializationError/Reason/invalidPropertyList(detail:)``.
    public static var invalidPropertyList: Self { Self("invalidPropertyList") }
    /// See ``RequestSerializationError/Reason/queryStringFailed(detail:)``.
    public static var queryStringFailed: Self { Self("queryStringFailed") }
    /// See ``RequestSerializationError/Reason/unreadableFile(_:detail:)``.
    public static var unreadableFile: Self { Self("unreadableFile") }
    /// See ``RequestSerializationError/Reason/unencodableString``.
    public static var unencodableString: Self { Self("unencodableString") }
    /// See ``RequestSerializationError/Reason/unencodableBody(detail:)``.
    public static var unencodableBody: Self { Self("unencodableBody") }
    /// See ``RequestSerializationError/Reason/unencodableHeaderValue(name:)``.
    public static var unencodableHeaderValue: Self { Self("unencodableHeaderValue") }
}
