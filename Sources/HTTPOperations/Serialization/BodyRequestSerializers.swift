import Foundation
import Synchronization

/// Builds requests whose parameters are a JSON body (`application/json`), except for the
/// methods that put parameters in the query (GET, HEAD, DELETE by default).
open class JSONRequestSerializer: HTTPRequestSerializer, @unchecked Sendable {
    // @unchecked Sendable: `writingOptions` lives behind its Mutex.

    private let options = Mutex<JSONSerialization.WritingOptions>([])

    /// Creates a serializer writing JSON with `writingOptions`.
    public init(writingOptions: JSONSerialization.WritingOptions = []) {
        super.init()
        options.withLock { $0 = writingOptions }
    }

    /// Options for `JSONSerialization`. Default none.
    public var writingOptions: JSONSerialization.WritingOptions {
        get { options.withLock { $0 } }
        set { options.withLock { $0 = newValue } }
    }

    /// `request` with `parameters` as a JSON body (or in the query, for query methods).
    ///
    /// - Throws: ``RequestSerializationError`` with `.invalidJSONObject` for parameters JSON
    ///   cannot represent.
    open override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        if usesQuery(request) { return try super.request(bySerializing: request, withParameters: parameters) }
        var request = applyingDefaults(to: request)
        guard let parameters else { return request }
        // Checked first: JSONSerialization traps on what it cannot write.
        guard JSONSerialization.isValidJSONObject(parameters) else {
            throw RequestSerializationError(.invalidJSONObject)
        }
        if request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        do {
            request.httpBody = try JSONSerialization.data(withJSONObject: parameters, options: writingOptions)
        } catch {
            throw RequestSerializationError(.invalidJSONObject, underlying: error)
        }
        return request
    }
}

/// Builds requests whose parameters are a property-list body (`application/x-plist`), except
/// for the methods that put parameters in the query.
open class PropertyListRequestSerializer: HTTPRequestSerializer, @unchecked Sendable {
    // @unchecked Sendable: `format` is set at init and only read after.

    /// The property-list format of bodies.
    public let format: PropertyListSerialization.PropertyListFormat

    /// Creates a serializer writing `format` (XML by default).
    public init(format: PropertyListSerialization.PropertyListFormat = .xml) {
        self.format = format
        super.init()
    }

    /// `request` with `parameters` as a property-list body (or in the query).
    ///
    /// - Throws: ``RequestSerializationError`` with `.invalidPropertyList`.
    open override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        if usesQuery(request) { return try super.request(bySerializing: request, withParameters: parameters) }
        var request = applyingDefaults(to: request)
        guard let parameters else { return request }
        guard PropertyListSerialization.propertyList(parameters, isValidFor: format) else {
            throw RequestSerializationError(.invalidPropertyList(detail: "the parameters hold a value a property list cannot"))
        }
        if request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue("application/x-plist", forHTTPHeaderField: "Content-Type")
        }
        do {
            request.httpBody = try PropertyListSerialization.data(fromPropertyList: parameters, format: format, options: 0)
        } catch {
            throw RequestSerializationError(.invalidPropertyList(detail: "\(error)"), underlying: error)
        }
        return request
    }
}
