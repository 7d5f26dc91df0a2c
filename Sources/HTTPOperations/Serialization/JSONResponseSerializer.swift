import Foundation

/// Validates a response and decodes its JSON body with `JSONSerialization`.
///
/// Defaults: status 200–299; content types `application/json`, `text/json`,
/// `text/javascript`; no reading options. An empty body, or one of only whitespace, is no
/// object and no error (servers send them with 204 or with 200 and nothing to say).
public struct JSONResponseSerializer: ValidatingResponseSerializer, HeadOnlyDecoding {
    /// The content types JSON arrives with: `application/json`, `text/json`, `text/javascript`.
    public static let jsonContentTypes: Set<String> = ["application/json", "text/json", "text/javascript"]

    /// The status codes that pass validation. Default 200–299.
    public var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    /// The MIME types that pass validation, compared case-insensitively. Default
    /// ``jsonContentTypes``.
    public var acceptableContentTypes: Set<String>? = Self.jsonContentTypes
    /// Options for `JSONSerialization`. Default none.
    public var readingOptions: JSONSerialization.ReadingOptions
    /// Remove keys whose value is `null` from every dictionary, through nested dictionaries
    /// and arrays. Default false.
    public var removesKeysWithNullValues = false

    /// Creates a serializer with the defaults above and `readingOptions`.
    public init(readingOptions: JSONSerialization.ReadingOptions = []) {
        self.readingOptions = readingOptions
    }

    /// Decodes the body as JSON, without validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.invalidJSON`.
    public func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, data.contains(where: { !Self.isJSONWhitespace($0) }) else { return nil }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: readingOptions.union(.fragmentsAllowed))
        } catch {
            throw ResponseSerializationError(.invalidJSON(detail: "\(error)"), response: response, data: data, underlying: error)
        }
        return removesKeysWithNullValues ? Self.removingNulls(from: object) : object
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// `object` without `null` values in any dictionary, however deep.
    static func removingNulls(from object: Any) -> Any {
        switch object {
        case let dictionary as [String: Any]:
            var result: [String: Any] = [:]
            for (key, value) in dictionary where !(value is NSNull) {
                result[key] = removingNulls(from: value)
            }
            return result
        case let array as [Any]:
            return array.map(removingNulls(from:))
        default:
            return object
        }
    }
}
