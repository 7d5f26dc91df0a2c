import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response serializer that accepts a response by its status code and content type, then
/// decodes its body: the shape of every serializer the library ships.
///
/// Adopt it for a serializer of your own (where AFNetworking 2 had you subclass
/// `AFHTTPResponseSerializer`): store the two settings and write ``decode(response:data:)``;
/// ``validate(response:data:)`` and ``URLResponseSerialization/responseObject(for:data:)``
/// come with the protocol. To build on one of the library's serializers, hold it and call it.
///
/// The serializers are values: a copy set on a manager or an operation is that one's own,
/// and a change to yours afterwards does not reach it.
public protocol ValidatingResponseSerializer: URLResponseSerialization {
    /// The status codes that pass validation.
    var acceptableStatusCodes: IndexSet { get set }

    /// The MIME types that pass validation, compared case-insensitively; nil accepts any,
    /// including none.
    var acceptableContentTypes: Set<String>? { get set }

    /// Checks `response` before it is decoded. The default checks the acceptable status codes
    /// and content types; write your own to check more (call the default through a serializer
    /// you hold, or throw ``ResponseValidationError`` yourself).
    ///
    /// - Throws: The reason the response is refused; the operation then fails with it.
    func validate(response: URLResponse?, data: Data?) throws

    /// Turns the body into the object, without validating the response.
    ///
    /// An operation whose response failed validation calls it too, so that a 4xx or 5xx body
    /// is still available decoded (``HTTPRequestOperation/responseObject``).
    ///
    /// - Throws: A decoding error; the operation then fails with it.
    func decode(response: URLResponse?, data: Data?) throws -> Any?
}

extension ValidatingResponseSerializer {
    /// Checks `response` against the acceptable status codes and content types: the default
    /// of ``validate(response:data:)``.
    ///
    /// Responses that are not HTTP (a `file:` URL) pass: they have neither.
    ///
    /// - Throws: ``ResponseValidationError`` listing every reason the response was refused.
    public func validate(response: URLResponse?, data: Data?) throws {
        guard let response = response as? HTTPURLResponse else { return }
        let reasons = rejections(statusCode: response.statusCode, mimeType: response.mimeType, data: data)
        if !reasons.isEmpty {
            throw ResponseValidationError(reasons: reasons, response: response, data: data)
        }
    }

    /// Validates, then decodes.
    ///
    /// - Throws: ``ResponseValidationError`` or what ``decode(response:data:)`` throws.
    public func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try validate(response: response, data: data)
        return try decode(response: response, data: data)
    }

    /// Why a response with this status code and MIME type would be refused; empty when it
    /// passes. The one rule behind ``validate(response:data:)`` and the head-only path.
    func rejections(statusCode: Int, mimeType: String?, data: Data?) -> [ResponseValidationError.Reason] {
        var reasons: [ResponseValidationError.Reason] = []
        if !acceptableStatusCodes.contains(statusCode) {
            reasons.append(.unacceptableStatusCode(statusCode))
        }
        if let types = acceptableContentTypes, !(data?.isEmpty ?? true) || mimeType != nil {
            if !(mimeType.map { Self.mimeType($0, isAmong: types) } ?? false) {
                reasons.append(.unacceptableContentType(mimeType, acceptable: types))
            }
        }
        return reasons
    }

    /// Whether `mimeType` is one of `types`, ignoring ASCII case (media types are ASCII
    /// tokens). The exact lookup first: the library's settings are lower case, and so is a
    /// MIME type read from the head; the settings are kept as given, so a mixed-case one is
    /// compared byte by byte, without making a string.
    private static func mimeType(_ mimeType: String, isAmong types: Set<String>) -> Bool {
        types.contains(mimeType) || types.contains { $0.utf8.elementsEqual(mimeType.utf8) { asciiLowercased($0) == asciiLowercased($1) } }
    }
}
