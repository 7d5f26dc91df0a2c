import Foundation

/// One method per HTTP verb, in the AFNetworking 2.0 shape: build the request with the
/// request serializer, make the operation, enqueue it, return it. A request the serializer
/// cannot build calls `failure` (with a nil operation) on the completion queue and returns nil.
extension HTTPRequestOperationManager {
    /// Enqueues a GET; parameters go to the query.
    @discardableResult
    public func get(_ urlString: String, parameters: Any? = nil, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        perform("GET", urlString, parameters: parameters, success: success, failure: failure)
    }

    /// Enqueues a HEAD; parameters go to the query; success gets no object.
    @discardableResult
    public func head(_ urlString: String, parameters: Any? = nil, success: (@Sendable (HTTPRequestOperation) -> Void)?,
                     failure: Failure?) -> HTTPRequestOperation? {
        var objectless: Success?
        if let success {
            objectless = { @Sendable operation, _ in success(operation) }
        }
        return perform("HEAD", urlString, parameters: parameters, success: objectless, failure: failure)
    }

    /// Enqueues a POST; parameters go to the body as the request serializer encodes them.
    @discardableResult
    public func post(_ urlString: String, parameters: Any? = nil, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        perform("POST", urlString, parameters: parameters, success: success, failure: failure)
    }

    /// Enqueues a multipart POST: parameters as form fields, then the parts `block` appends.
    @discardableResult
    public func post(_ urlString: String, parameters: [String: Any]? = nil,
                     constructingBodyWith block: @escaping (MultipartFormData) throws -> Void,
                     success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        perform("POST", urlString, parameters: parameters, body: block, success: success, failure: failure)
    }

    /// Enqueues a PUT.
    @discardableResult
    public func put(_ urlString: String, parameters: Any? = nil, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        perform("PUT", urlString, parameters: parameters, success: success, failure: failure)
    }

    /// Enqueues a PATCH.
    @discardableResult
    public func patch(_ urlString: String, parameters: Any? = nil, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        perform("PATCH", urlString, parameters: parameters, success: success, failure: failure)
    }

    /// Enqueues a DELETE; parameters go to the query.
    @discardableResult
    public func delete(_ urlString: String, parameters: Any? = nil, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        perform("DELETE", urlString, parameters: parameters, success: success, failure: failure)
    }
}
