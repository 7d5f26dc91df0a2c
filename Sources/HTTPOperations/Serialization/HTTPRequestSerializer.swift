import Foundation

/// The version of this library, as it names itself in `User-Agent`.
public let httpOperationsVersion = "0.1.0"

/// Builds requests: URL, query string or body, and default header fields.
///
/// Parameters go to the query for the methods in ``httpMethodsEncodingParametersInURI``
/// (GET, HEAD, DELETE), appended with `&` when the URL already has a query; for other methods
/// they become a body as ``bodyEncoding`` says (a form by default), unless the body's
/// `Content-Type` is already set, which is kept (an empty parameter set is a valid empty
/// body). Default header fields and request properties only fill gaps: what the request
/// already says wins.
///
/// A value: set it on a manager, and change a copy to change it
/// (`var serializer = HTTPRequestSerializer(bodyEncoding: .json())`,
/// `serializer.setValue("Bearer …", forHTTPHeaderField: "Authorization")`,
/// `manager.requestSerializer = serializer`).
public struct HTTPRequestSerializer: URLRequestSerialization {
    /// Builds a query string from a request and parameters; may throw.
    public typealias QueryStringSerialization = @Sendable (_ request: URLRequest, _ parameters: Any) throws -> String

    /// How parameters become the body of a request whose method does not put them in the query.
    public enum BodyEncoding: Sendable, Equatable {
        /// `application/x-www-form-urlencoded` in ``HTTPRequestSerializer/stringEncoding``
        /// (AFNetworking 2's `AFHTTPRequestSerializer`).
        case form
        /// `application/json`, written by `JSONSerialization` with these options
        /// (`AFJSONRequestSerializer`).
        case json(JSONSerialization.WritingOptions = [])
        /// `application/x-plist` in this format (`AFPropertyListRequestSerializer`).
        case propertyList(PropertyListSerialization.PropertyListFormat = .xml)
    }

    /// How parameters become a body. Default ``BodyEncoding/form``.
    public var bodyEncoding: BodyEncoding

    /// The default header fields, as set.
    private var headers: [String: String] = [:] {
        didSet { preparedHeaders = Self.asStored(headers) }
    }
    /// ``headers`` as Foundation keeps them once set on a request: names capitalized, a value
    /// it refuses left out. Applied to each request in one step: set one at a time, Foundation
    /// checks each value character by character and capitalizes each name every time (a large
    /// share of a small GET's instructions; CHANGELOG.md has the figures).
    private var preparedHeaders: [String: String] = [:]

    /// The encoding of form bodies and its `charset`. Default UTF-8.
    public var stringEncoding: String.Encoding = .utf8

    /// Methods whose parameters go to the query (upper-cased when set). Default GET, HEAD, DELETE.
    public var httpMethodsEncodingParametersInURI: Set<String> = ["GET", "HEAD", "DELETE"] {
        didSet { httpMethodsEncodingParametersInURI = Set(httpMethodsEncodingParametersInURI.map { $0.uppercased() }) }
    }

    /// Copied to requests when set. Default unset (the request's own, 60 s).
    public var timeoutInterval: TimeInterval?

    /// Copied to requests when set. HTTPOperations keeps no response cache of Foundation's:
    /// every policy loads from the network, except `.returnCacheDataDontLoad`, which forbids
    /// it, so such a request fails with `URLError(.resourceUnavailable)` without sending anything.
    public var cachePolicy: URLRequest.CachePolicy?

    /// Copied to requests when set. A request whose `httpShouldHandleCookies` is false neither
    /// sends nor stores cookies of the operation's ``CookieStore``; without a store, no cookie
    /// is kept whatever this says.
    public var httpShouldHandleCookies: Bool?

    /// Copied to requests when set, and **ignored**: Linux servers have no cellular interface
    /// that this library could tell apart.
    public var allowsCellularAccess: Bool?

    /// Your own query-string rules in place of AFNetworking's (``QueryString``); nil (the
    /// default) keeps those.
    public var queryStringSerialization: QueryStringSerialization?

    /// Creates a serializer with `Accept-Language` from the process's preferred languages
    /// and a `User-Agent` naming this library and the system.
    ///
    /// - Parameter bodyEncoding: How parameters become a body. Default a form.
    public init(bodyEncoding: BodyEncoding = .form) {
        self.bodyEncoding = bodyEncoding
        let languages = Locale.preferredLanguages.prefix(6).enumerated().map { index, language in
            "\(language);q=\(String(format: "%.1g", 1 - Double(index) * 0.1))"
        }
        let system = ProcessInfo.processInfo.operatingSystemVersionString
        if !languages.isEmpty { headers["Accept-Language"] = languages.joined(separator: ", ") }
        headers["User-Agent"] = "HTTPOperations/\(httpOperationsVersion) (Linux; \(system); Swift)"
        preparedHeaders = Self.asStored(headers)
    }

    // MARK: - Default header fields

    /// The header fields added to every request that does not set them itself.
    public var httpRequestHeaders: [String: String] { headers }

    /// Sets a default header field; nil removes it.
    public mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        if let existing = headers.keys.first(where: { $0.caseInsensitiveCompare(field) == .orderedSame }) {
            headers[existing] = nil
        }
        if let value { headers[field] = value }
    }

    /// The default value of a header field, compared case-insensitively.
    public func value(forHTTPHeaderField field: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }

    /// Sets `Authorization` to Basic credentials.
    public mutating func setAuthorizationHeaderField(username: String, password: String) {
        let token = Data("\(username):\(password)".utf8).base64EncodedString()
        setValue("Basic \(token)", forHTTPHeaderField: "Authorization")
    }

    /// Removes the default `Authorization` field.
    public mutating func clearAuthorizationHeader() {
        setValue(nil, forHTTPHeaderField: "Authorization")
    }

    /// `headers` set one at a time on a request by Foundation, as they are read back.
    private static func asStored(_ headers: [String: String]) -> [String: String] {
        var request = URLRequest(url: URL(fileURLWithPath: "/"))
        for (field, value) in headers { request.setValue(value, forHTTPHeaderField: field) }
        return request.allHTTPHeaderFields ?? [:]
    }

    // MARK: - Building requests

    /// `request` with the default header fields and properties filled in, and `parameters` in
    /// the query or a body.
    ///
    /// - Throws: ``RequestSerializationError`` for parameters that cannot be encoded (a value
    ///   JSON or a property list cannot hold, text the string encoding cannot write);
    ///   ``SecurityError`` for a method or header field holding CR, LF or NUL.
    public func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        try checkDefaultFields()
        var request = applyingDefaults(to: request)
        try Self.checkFields(of: request)
        guard let parameters else { return request }
        if usesQuery(request) {
            let query = try queryString(for: request, parameters: parameters)
            if !query.isEmpty, let url = request.url {
                let separator = url.query == nil ? "?" : "&"
                // Before the fragment: after it, the parameters would be part of the fragment,
                // which is never sent. A URL holds at most one `#`, its fragment's.
                let text = url.absoluteString
                let fragmentStart = text.firstIndex(of: "#") ?? text.endIndex
                request.url = URL(string: text[..<fragmentStart] + separator + query + text[fragmentStart...])
            }
            return request
        }
        let (contentType, body) = try encodedBody(of: parameters, for: request)
        if request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        }
        request.httpBody = body
        return request
    }

    /// `parameters` as a body in ``bodyEncoding``, with its content type.
    private func encodedBody(of parameters: Any, for request: URLRequest) throws -> (contentType: String, body: Data) {
        switch bodyEncoding {
        case .form:
            // Escaped as the bytes the labelled charset writes (a server decodes `%E9` in
            // ISO-8859-1 as é); a charset no form is sent in, or without a known name, is UTF-8.
            let (encoding, charset) = formCharset
            let query: String
            if queryStringSerialization == nil {
                guard let escaped = QueryString.make(from: parameters, escapingBytesOf: encoding) else {
                    throw RequestSerializationError(.unencodableString)
                }
                query = escaped
            } else {
                query = try queryString(for: request, parameters: parameters)
            }
            guard let body = query.data(using: encoding) else {
                throw RequestSerializationError(.unencodableString)
            }
            return ("application/x-www-form-urlencoded; charset=\(charset)", body)
        case .json(let options):
            // What JSONSerialization would trap on, overflow the stack with or write as `NaN`
            // (`isValidJSONObject` catches it too, at several times the cost, and refuses every
            // fragment, whatever the options); for the rest, the writer throws.
            guard JSONWriterGuard.admits(parameters, options: options) else {
                throw RequestSerializationError(.invalidJSONObject)
            }
            do {
                return ("application/json", try JSONSerialization.data(withJSONObject: parameters, options: options))
            } catch {
                throw RequestSerializationError(.invalidJSONObject, underlying: error)
            }
        case .propertyList(let format):
            guard PropertyListSerialization.propertyList(parameters, isValidFor: format) else {
                throw RequestSerializationError(.invalidPropertyList(detail: "the parameters hold a value a property list cannot"))
            }
            do {
                return ("application/x-plist", try PropertyListSerialization.data(fromPropertyList: parameters, format: format, options: 0))
            } catch {
                throw RequestSerializationError(.invalidPropertyList(detail: "\(error)"), underlying: error)
            }
        }
    }

    /// Throws ``SecurityError`` `.invalidHeaderField` when a default header field set with
    /// ``setValue(_:forHTTPHeaderField:)`` holds CR, LF or NUL. (Foundation's `URLRequest`
    /// silently drops such a value, so it must be caught here, before it is applied.)
    func checkDefaultFields() throws {
        for (name, value) in headers {
            try HTTPFieldValidation.check(name: name, value: value)
        }
    }

    /// Throws ``SecurityError`` when the method or a header field of `request` would split it
    /// (CR, LF or NUL; a method or field name that is not a token).
    static func checkFields(of request: URLRequest) throws {
        try HTTPFieldValidation.check(method: request.httpMethod ?? "GET", url: request.url)
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            try HTTPFieldValidation.check(name: name, value: value, url: request.url)
        }
    }

    /// Whether `request`'s method puts parameters in the query.
    func usesQuery(_ request: URLRequest) -> Bool {
        httpMethodsEncodingParametersInURI.contains((request.httpMethod ?? "GET").uppercased())
    }

    /// `request` with the default header fields and properties where it has none.
    func applyingDefaults(to request: URLRequest) -> URLRequest {
        var request = request
        if let own = request.allHTTPHeaderFields, !own.isEmpty {
            let missing = preparedHeaders.filter { field, _ in !own.keys.contains { fieldNamesMatch($0, field) } }
            if !missing.isEmpty { request.allHTTPHeaderFields = own.merging(missing) { mine, _ in mine } }
        } else if !preparedHeaders.isEmpty {
            request.allHTTPHeaderFields = preparedHeaders
        }
        if let timeout = timeoutInterval { request.timeoutInterval = timeout }
        if let policy = cachePolicy { request.cachePolicy = policy }
        if let cookies = httpShouldHandleCookies { request.httpShouldHandleCookies = cookies }
        if let cellular = allowsCellularAccess { request.allowsCellularAccess = cellular }
        return request
    }

    private func queryString(for request: URLRequest, parameters: Any) throws -> String {
        guard let block = queryStringSerialization else {
            return QueryString.make(from: parameters)
        }
        do {
            return try block(request, parameters)
        } catch {
            throw RequestSerializationError(.queryStringFailed(detail: "\(error)"), underlying: error)
        }
    }

    /// The encoding a form body is written in, and its IANA name: ``stringEncoding`` when it
    /// has a name here and a form can be sent in it; UTF-8 for UTF-16 and UTF-32 (as HTML
    /// submits a form whose charset is one of them) and for encodings without a known name.
    var formCharset: (encoding: String.Encoding, name: String) {
        Self.formCharsetNames[stringEncoding].map { (stringEncoding, $0) } ?? (.utf8, "utf-8")
    }

    /// The IANA names of the encodings a form body is sent in as they are.
    private static let formCharsetNames: [String.Encoding: String] = [
        .isoLatin1: "iso-8859-1", .isoLatin2: "iso-8859-2", .ascii: "us-ascii",
        .windowsCP1250: "windows-1250", .windowsCP1251: "windows-1251", .windowsCP1252: "windows-1252",
        .windowsCP1253: "windows-1253", .windowsCP1254: "windows-1254", .shiftJIS: "shift_jis",
        .japaneseEUC: "euc-jp", .iso2022JP: "iso-2022-jp", .macOSRoman: "macintosh",
    ]
}
