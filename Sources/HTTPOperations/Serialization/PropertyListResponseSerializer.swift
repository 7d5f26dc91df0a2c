import Foundation
import Synchronization

/// Validates a response and decodes its property-list body with `PropertyListSerialization`.
///
/// Defaults: status 200–299; content type `application/x-plist`; any format; immutable
/// containers. An empty body is no object and no error.
open class PropertyListResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    // @unchecked Sendable: this class's settings live in `plistSettings`, behind its Mutex.

    private struct Settings {
        var format: PropertyListSerialization.PropertyListFormat?
        var readOptions: PropertyListSerialization.ReadOptions = []
    }

    private let plistSettings = Mutex(Settings())

    /// Creates a serializer with the defaults above.
    public override init() {
        super.init()
        acceptableContentTypes = ["application/x-plist"]
    }

    /// The format the body must have; nil (the default) accepts XML and binary.
    public var format: PropertyListSerialization.PropertyListFormat? {
        get { plistSettings.withLock { $0.format } }
        set { plistSettings.withLock { $0.format = newValue } }
    }

    /// Options for `PropertyListSerialization`. Default none.
    public var readOptions: PropertyListSerialization.ReadOptions {
        get { plistSettings.withLock { $0.readOptions } }
        set { plistSettings.withLock { $0.readOptions = newValue } }
    }

    /// Decodes the body as a property list, without validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.invalidPropertyList`.
    open override func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        let (wanted, options) = plistSettings.withLock { ($0.format, $0.readOptions) }
        var found = PropertyListSerialization.PropertyListFormat.xml
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: options, format: &found)
        } catch {
            throw ResponseSerializationError(.invalidPropertyList(detail: "\(error)"), response: response, data: data, underlying: error)
        }
        if let wanted, wanted != found {
            throw ResponseSerializationError(.invalidPropertyList(detail: "expected format \(wanted.rawValue), found \(found.rawValue)"),
                                             response: response, data: data)
        }
        return object
    }
}
