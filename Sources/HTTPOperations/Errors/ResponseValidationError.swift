import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response that arrived intact but is not what the caller accepts.
///
/// It carries everything needed to report or recover: the URL, the status code, the
/// response, the body, and every reason it was refused (a wrong status and a wrong content
/// type are both reported when both are wrong).
public struct ResponseValidationError: Error, Sendable, CustomStringConvertible {
    /// The kinds of ``ResponseValidationError``'s reasons.
    public typealias Code = ErrorCode<ResponseValidationError>

    /// One reason a response was refused, with its values. Compare with the static members,
    /// or compare ``code`` to ignore the values.
    public struct Reason: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case unacceptableStatusCode(Int)
            case unacceptableContentType(String?, acceptable: Set<String>)
        }

        let kind: Kind

        /// The status code is not among the acceptable ones.
        public static func unacceptableStatusCode(_ code: Int) -> Reason {
            Reason(kind: .unacceptableStatusCode(code))
        }

        /// The MIME type (nil when the response named none) is not among the acceptable ones.
        public static func unacceptableContentType(_ type: String?, acceptable: Set<String>) -> Reason {
            Reason(kind: .unacceptableContentType(type, acceptable: acceptable))
        }

        /// The kind, without the values.
        public var code: Code {
            switch kind {
            case .unacceptableStatusCode: .unacceptableStatusCode
            case .unacceptableContentType: .unacceptableContentType
            }
        }
    }

    /// Every reason, in the order checked: status code first.
    public let reasons: [Reason]
    /// The response refused.
    public let response: HTTPURLResponse
    /// Its body, when it was kept in memory.
    public let data: Data?

    /// The kind of the first reason (a wrong status code comes before a wrong content type).
    public var code: Code { reasons.first?.code ?? .unacceptableStatusCode }

    /// The URL of the response.
    public var url: URL? { response.url }
    /// The status code of the response.
    public var statusCode: Int { response.statusCode }

    /// Creates an error for `response` refused for `reasons`.
    public init(reasons: [Reason], response: HTTPURLResponse, data: Data?) {
        self.reasons = reasons
        self.response = response
        self.data = data
    }

    /// For example: `Request failed: not found (404) for http://127.0.0.1:8080/missing`.
    public var description: String {
        let what = reasons.map { reason -> String in
            switch reason.kind {
            case .unacceptableStatusCode(let code):
                "\(HTTPURLResponse.localizedString(forStatusCode: code)) (\(code))"
            case .unacceptableContentType(let type, _):
                "unacceptable content type \(type ?? "(none)")"
            }
        }
        return "Request failed: \(what.joined(separator: ", ")) for \(url?.absoluteString ?? "(no URL)")"
    }
}

extension ErrorCode where Domain == ResponseValidationError {
    /// See ``ResponseValidationError/Reason/unacceptableStatusCode(_:)``.
    public static var unacceptableStatusCode: Self { Self("unacceptableStatusCode") }
    /// See ``ResponseValidationError/Reason/unacceptableContentType(_:acceptable:)``.
    public static var unacceptableContentType: Self { Self("unacceptableContentType") }
}
