import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Validates a response's status code and content type, and returns its body as `Data`.
///
/// The base of the response serializers: subclasses call ``validate(response:data:)`` and
/// decode. Its settings may be changed at any time from any thread.
///
/// ## Subclassing notes
///
/// Override ``decode(response:data:)`` to turn the body into an object; ``responseObject(for:data:)``
/// validates first and then calls it. Keep your own settings behind a lock as this class does.
open class HTTPResponseSerializer: URLResponseSerialization, @unchecked Sendable {
    // @unchecked Sendable: the settings live in `settings`, behind its Mutex.

    private struct Settings {
        var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
        var acceptableContentTypes: Set<String>?
    }

    private let settings = Mutex(Settings())

    /// Whether this serializer is one of the library's own (not a subclass) and can judge a
    /// response from its head (HeadOnlySerialization.swift). Worked out once, from the dynamic
    /// type: asked per response, the protocol cast cost about 1,700 instructions of a small GET.
    let judgesFromHead: Bool

    /// Creates a serializer that accepts status codes 200–299 and any content type.
    public init() {
        judgesFromHead = Self.judgesFromHead(Self.self)
    }

    /// The status codes that pass validation. Default 200–299.
    public var acceptableStatusCodes: IndexSet {
        get { settings.withLock { $0.acceptableStatusCodes } }
        set { settings.withLock { $0.acceptableStatusCodes = newValue } }
    }

    /// The MIME types that pass validation, compared case-insensitively; nil (the default)
    /// accepts any, including none.
    public var acceptableContentTypes: Set<String>? {
        get { settings.withLock { $0.acceptableContentTypes } }
        set { settings.withLock { $0.acceptableContentTypes = newValue.map { Set($0.map { $0.lowercased() }) } } }
    }

    /// Checks `response` against the acceptable status codes and content types.
    ///
    /// Responses that are not HTTP (a `file:` URL) pass: they have neither.
    ///
    /// - Throws: ``ResponseValidationError`` listing every reason the response was refused.
    open func validate(response: URLResponse?, data: Data?) throws {
        guard let response = response as? HTTPURLResponse else { return }
        let reasons = rejections(statusCode: response.statusCode, mimeType: response.mimeType, data: data)
        if !reasons.isEmpty {
            throw ResponseValidationError(reasons: reasons, response: response, data: data)
        }
    }

    /// Why a response with this status code and MIME type would be refused; empty when it
    /// passes. The one rule behind ``validate(response:data:)`` and the head-only path.
    func rejections(statusCode: Int, mimeType: String?, data: Data?) -> [ResponseValidationError.Reason] {
        let (codes, types) = settings.withLock { ($0.acceptableStatusCodes, $0.acceptableContentTypes) }
        var reasons: [ResponseValidationError.Reason] = []
        if !codes.contains(statusCode) {
            reasons.append(.unacceptableStatusCode(statusCode))
        }
        if let types, !(data?.isEmpty ?? true) || mimeType != nil {
            if mimeType.map({ !types.contains($0.lowercased()) }) ?? true {
                reasons.append(.unacceptableContentType(mimeType, acceptable: types))
            }
        }
        return reasons
    }

    /// Validates, then decodes.
    ///
    /// - Throws: ``ResponseValidationError`` or what ``decode(response:data:)`` throws.
    open func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try validate(response: response, data: data)
        return try decode(response: response, data: data)
    }

    /// Turns the body into the object, without validating the response. The base class
    /// returns `data` as it is; subclasses decode.
    ///
    /// An operation whose response failed validation calls it too, so that a 4xx or 5xx body
    /// is still available decoded (``HTTPRequestOperation/responseObject``).
    open func decode(response: URLResponse?, data: Data?) throws -> Any? {
        data
    }
}
