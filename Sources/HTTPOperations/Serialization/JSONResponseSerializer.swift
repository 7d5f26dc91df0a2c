import Foundation
import Synchronization

/// Validates a response and decodes its JSON body with `JSONSerialization`.
///
/// Defaults: status 200–299; content types `application/json`, `text/json`,
/// `text/javascript`; no reading options. An empty body, or one of only whitespace, is no
/// object and no error (servers send them with 204 or with 200 and nothing to say).
open class JSONResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    // @unchecked Sendable: this class's settings live in `jsonSettings`, behind its Mutex.

    private struct Settings {
        var readingOptions: JSONSerialization.ReadingOptions = []
        var removesKeysWithNullValues = false
    }

    private let jsonSettings = Mutex(Settings())

    /// The content types JSON arrives with: `application/json`, `text/json`, `text/javascript`.
    public static let jsonContentTypes: Set<String> = ["application/json", "text/json", "text/javascript"]

    /// Creates a serializer with the defaults above.
    public override init() {
        super.init()
        acceptableContentTypes = Self.jsonContentTypes
    }

    /// Creates a serializer with `readingOptions`.
    public convenience init(readingOptions: JSONSerialization.ReadingOptions) {
        self.init()
        self.readingOptions = readingOptions
    }

    /// Options for `JSONSerialization`. Default none.
    public var readingOptions: JSONSerialization.ReadingOptions {
        get { jsonSettings.withLock { $0.readingOptions } }
        set { jsonSettings.withLock { $0.readingOptions = newValue } }
    }

    /// Remove keys whose value is `null` from every dictionary, through nested dictionaries
    /// and arrays. Default false.
    public var removesKeysWithNullValues: Bool {
        get { jsonSettings.withLock { $0.removesKeysWithNullValues } }
        set { jsonSettings.withLock { $0.removesKeysWithNullValues = newValue } }
    }

    /// Decodes the body as JSON, without validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.invalidJSON`.
    open override func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, data.contains(where: { !Self.isJSONWhitespace($0) }) else { return nil }
        let (options, removeNulls) = jsonSettings.withLock { ($0.readingOptions, $0.removesKeysWithNullValues) }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: options.union(.fragmentsAllowed))
        } catch {
            throw ResponseSerializationError(.invalidJSON(detail: "\(error)"), response: response, data: data, underlying: error)
        }
        return removeNulls ? Self.removingNulls(from: object) : object
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
