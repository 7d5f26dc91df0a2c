import Foundation

extension URLRequestSerialization {
    /// A request with a streamed `multipart/form-data` body: `parameters` as form fields
    /// first (named as in a query: `key[sub]`, `key[]`, written in ``stringEncoding``), then
    /// the parts the block appends.
    ///
    /// The serializer sets the rest of the request (its default header fields and
    /// properties); the body is read as curl sends it; `Content-Length` is exact; the
    /// boundary is random. Parameters never go to the query here, whatever the method.
    ///
    /// - Parameters:
    ///   - method: Normally POST or PUT.
    ///   - urlString: The URL.
    ///   - parameters: Form fields.
    ///   - block: Appends the parts; may throw (a file that cannot be read does).
    /// - Throws: ``RequestSerializationError``, what `block` throws, or ``SecurityError``
    ///   `.invalidHeaderField` / `.invalidMethod` when a part's header field or the method
    ///   holds CR, LF or NUL.
    public func multipartFormRequest(method: String, urlString: String, parameters: [String: Any]? = nil,
                                     constructingBodyWith block: ((MultipartFormData) throws -> Void)? = nil) throws -> URLRequest {
        var request = try request(bySerializing: URLRequest(method: method, urlString: urlString), withParameters: nil)
        try HTTPRequestSerializer.checkFields(of: request)
        let form = MultipartFormData()
        for pair in QueryString.pairs(key: nil, value: parameters ?? [:]) {
            let value = pair.value.map(QueryString.describe) ?? ""
            guard let data = value.data(using: stringEncoding) else {
                throw RequestSerializationError(.unencodableString)
            }
            form.appendPart(formData: data, name: pair.field)
        }
        try block?(form)
        try form.checkHeaderFields()
        let stream = MultipartBodyStream(form)
        request.httpBodyStream = stream
        request.setValue("multipart/form-data; boundary=\(form.boundary)", forHTTPHeaderField: "Content-Type")
        request.setValue("\(stream.contentLength)", forHTTPHeaderField: "Content-Length")
        return request
    }
}
