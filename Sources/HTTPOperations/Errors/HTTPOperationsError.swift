import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What every error of this library has, whatever its type: catch it to handle them all
/// without naming each one.
///
/// ```swift
/// do {
///     let user = try await manager.get("users/1", as: User.self)
/// } catch let error as any HTTPOperationsError {
///     logger.error("request failed", metadata: ["code": "\(error.codeName)", "url": "\(error.url?.absoluteString ?? "-")"])
/// }
/// ```
///
/// Each type keeps its own ``ErrorCode`` to switch on (`error.code == .bodyTooLarge`); this
/// protocol gives its name. Failures of the network itself are `URLError`s, with curl's code
/// and message attached, as URLSession's are: catch `URLError` beside this.
public protocol HTTPOperationsError: Error, Sendable, CustomStringConvertible {
    /// The type whose codes ``code`` is one of.
    associatedtype CodeDomain
    /// What kind of failure this is; compare it with the static members of ``ErrorCode``.
    var code: ErrorCode<CodeDomain> { get }
    /// The name of ``code`` (`"bodyTooLarge"`): stable across versions, for logs and metric
    /// labels, and readable where the concrete type is not known.
    var codeName: String { get }
    /// The URL of the request that failed, when the error knows it.
    var url: URL? { get }
    /// The error that caused this one, when there is one (a decoder's, a dependency's).
    var underlyingError: (any Error)? { get }
}

extension HTTPOperationsError {
    /// The name of ``code``.
    public var codeName: String { code.name }
    /// None, unless the type knows it.
    public var url: URL? { nil }
    /// None, unless the type has one.
    public var underlyingError: (any Error)? { nil }
}

extension TransferError: HTTPOperationsError {}
extension SecurityError: HTTPOperationsError {}
extension IntegrityError: HTTPOperationsError {}
extension ResponseValidationError: HTTPOperationsError {}

extension ResumeError: HTTPOperationsError {
    /// The URL of the response the resume was refused for, when there was one.
    public var url: URL? { response?.url }
}

extension RequestSerializationError: HTTPOperationsError {
    /// ``underlying``.
    public var underlyingError: (any Error)? { underlying }
}

extension ResponseSerializationError: HTTPOperationsError {
    /// The URL of the response that could not be turned into a result.
    public var url: URL? { response?.url }
    /// The decoder's or parser's error, or for `.noSerializerAccepted` the first serializer's.
    public var underlyingError: (any Error)? { underlying ?? reason.underlyingErrors.first }
}

extension DependencyError: HTTPOperationsError {
    /// ``underlying``: the failed dependency's error.
    public var underlyingError: (any Error)? { underlying }
}

