import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Validates a response's status code and content type, and returns its body as `Data`.
///
/// Defaults: status 200–299; any content type, including none.
public struct HTTPResponseSerializer: ValidatingResponseSerializer, HeadOnlyDecoding {
    /// The status codes that pass validation. Default 200–299.
    public var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    /// The MIME types that pass validation, compared case-insensitively; nil (the default)
    /// accepts any, including none.
    public var acceptableContentTypes: Set<String>?

    /// Creates a serializer with the defaults above.
    public init() {}

    /// The body, as it is.
    public func decode(response: URLResponse?, data: Data?) throws -> Any? {
        data
    }
}
