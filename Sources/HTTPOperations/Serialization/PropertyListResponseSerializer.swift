import Foundation

/// Validates a response and decodes its property-list body with `PropertyListSerialization`.
///
/// Defaults: status 200–299; content type `application/x-plist`; any format; immutable
/// containers. An empty body is no object and no error.
public struct PropertyListResponseSerializer: ValidatingResponseSerializer, HeadOnlyDecoding {
    /// The status codes that pass validation. Default 200–299.
    public var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    /// The MIME types that pass validation, compared case-insensitively. Default
    /// `application/x-plist`.
    public var acceptableContentTypes: Set<String>? = ["application/x-plist"]
    /// The format the body must have; nil (the default) accepts XML and binary.
    public var format: PropertyListSerialization.PropertyListFormat?
    /// Options for `PropertyListSerialization`. Default none.
    public var readOptions: PropertyListSerialization.ReadOptions = []

    /// Creates a serializer with the defaults above.
    public init() {}

    /// Decodes the body as a property list, without validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.invalidPropertyList`.
    public func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        var found = PropertyListSerialization.PropertyListFormat.xml
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: readOptions, format: &found)
        } catch {
            throw ResponseSerializationError(.invalidPropertyList(detail: "\(error)"), response: response, data: data, underlying: error)
        }
        if let format, format != found {
            throw ResponseSerializationError(.invalidPropertyList(detail: "expected format \(format.rawValue), found \(found.rawValue)"),
                                             response: response, data: data)
        }
        return object
    }
}
