import Foundation

/// Turns a request and parameters into the request to send: a query string, a body, headers.
///
/// The manager's ``HTTPRequestOperationManager/requestSerializer`` is any value of this
/// protocol: ``HTTPRequestSerializer``, or one of your own (which may hold one and call it).
/// Implementations must be safe to call from several threads at once.
public protocol URLRequestSerialization: Sendable {
    /// `request` with `parameters` encoded into it.
    ///
    /// - Throws: ``RequestSerializationError`` when the parameters cannot be encoded.
    func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest

    /// The encoding of the text this serializer writes into bodies (a multipart body's form
    /// fields). Default UTF-8.
    var stringEncoding: String.Encoding { get }

    /// A request for `method` and `urlString` with `parameters` encoded: what the manager's
    /// verbs call. The default makes the bare request and passes it to
    /// ``request(bySerializing:withParameters:)``.
    ///
    /// - Throws: ``RequestSerializationError`` for a URL that does not parse, or what
    ///   ``request(bySerializing:withParameters:)`` throws.
    func request(method: String, urlString: String, parameters: Any?) throws -> URLRequest

    /// A request with a streamed `multipart/form-data` body: what the manager's multipart
    /// verbs call. The default is described at its implementation.
    ///
    /// - Throws: ``RequestSerializationError``, what `block` throws, or ``SecurityError``.
    func multipartFormRequest(method: String, urlString: String, parameters: [String: Any]?,
                              constructingBodyWith block: ((MultipartFormData) throws -> Void)?) throws -> URLRequest
}

extension URLRequestSerialization {
    /// UTF-8.
    public var stringEncoding: String.Encoding { .utf8 }

    /// A request for `method` and `urlString` with `parameters` encoded: the bare request,
    /// passed to ``request(bySerializing:withParameters:)``.
    ///
    /// - Throws: ``RequestSerializationError`` for a URL that does not parse, or what
    ///   ``request(bySerializing:withParameters:)`` throws.
    public func request(method: String, urlString: String, parameters: Any? = nil) throws -> URLRequest {
        try request(bySerializing: URLRequest(method: method, urlString: urlString), withParameters: parameters)
    }
}

extension URLRequest {
    /// A request for `method` (upper-cased) and `urlString`.
    ///
    /// - Throws: ``RequestSerializationError`` `.invalidURL` for a URL that does not parse.
    init(method: String, urlString: String) throws {
        guard let url = URL(string: urlString) else {
            throw RequestSerializationError(.invalidURL(urlString))
        }
        self.init(url: url)
        httpMethod = method.uppercased()
    }
}
