import Foundation
import Synchronization

/// The version of this library, as it names itself in `User-Agent`.
public let httpOperationsVersion = "0.1.0"

/// Builds requests: URL, query string or form body, and default header fields.
///
/// Parameters go to the query for the methods in ``httpMethodsEncodingParametersInURI``
/// (GET, HEAD, DELETE), appended with `&` when the URL already has a query; for other methods
/// they become an `application/x-www-form-urlencoded` body, unless a `Content-Type` is already
/// set (an empty parameter set is a valid empty body). Default header fields and request
/// properties only fill gaps: what the request already says wins.
///
/// ## Subclassing notes
///
/// Override ``request(bySerializing:withParameters:)`` to encode bodies differently (as
/// ``JSONRequestSerializer`` does) and call `super` for the methods that use the query.
open class HTTPRequestSerializer: URLRequestSerialization, @unchecked Sendable {
    // @unchecked Sendable: every setting lives in `settings`, behind its Mutex.

    /// Builds a query string from a request and parameters; may throw.
    public typealias QueryStringSerialization = @Sendable (_ request: URLRequest, _ parameters: Any) throws -> String

    private struct Settings {
        var headers: [String: String] = [:] {
            didSet { preparedHeaders = Self.asStored(headers) }
        }
        /// ``headers`` as Foundation keeps them once set on a request: names capitalized, a
        /// value it refuses left out. Applied to each request in one step: set one at a time,
        /// as they were, they cost 54,000 instructions a request, a quarter of a small GET's
        /// (callgrind, 2026-11-26), for Foundation checks each value character by character
        /// and capitalizes each name every time.
        private(set) var preparedHeaders: [String: String] = [:]
        var stringEncoding: String.Encoding = .utf8
        var methodsInURI: Set<String> = ["GET", "HEAD", "DELETE"]
        var timeoutInterval: TimeInterval?
        var cachePolicy: URLRequest.CachePolicy?
        var httpShouldHandleCookies: Bool?
        var allowsCellularAccess: Bool?
        var queryStringSerialization: QueryStringSerialization?

        /// `headers` set one at a time on a request by Foundation, as they are read back.
        private static func asStored(_ headers: [String: String]) -> [String: String] {
            var request = URLRequest(url: URL(fileURLWithPath: "/"))
            for (field, value) in headers { request.setValue(value, forHTTPHeaderField: field) }
            return request.allHTTPHeaderFields ?? [:]
        }
    }

    private let settings = Mutex(Settings())

    /// Creates a serializer with `Accept-Language` from the process's preferred languages
    /// and a `User-Agent` naming this library and the system.
    public init() {
        let languages = Locale.preferredLanguages.prefix(6).enumerated().map { index, language in
            "\(language);q=\(String(format: "%.1g", 1 - Double(index) * 0.1))"
        }
        let system = ProcessInfo.processInfo.operatingSystemVersionString
        settings.withLock { settings in
            if !languages.isEmpty { settings.headers["Accept-Language"] = languages.joined(separator: ", ") }
            settings.headers["User-Agent"] = "HTTPOperations/\(httpOperationsVersion) (Linux; \(system); Swift)"
        }
    }

    // MARK: - Settings

    /// The header fields added to every request that does not set them itself.
    public var httpRequestHeaders: [String: String] { settings.withLock { $0.headers } }

    /// Sets a default header field; nil removes it.
    public func setValue(_ value: String?, forHTTPHeaderField field: String) {
        settings.withLock { settings in
            let existing = settings.headers.keys.first { $0.caseInsensitiveCompare(field) == .orderedSame }
            if let existing { settings.headers[existing] = nil }
            if let value { settings.headers[field] = value }
        }
    }

    /// The default value of a header field, compared case-insensitively.
    public func value(forHTTPHeaderField field: String) -> String? {
        settings.withLock { $0.headers.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value }
    }

    /// Sets `Authorization` to Basic credentials.
    public func setAuthorizationHeaderField(username: String, password: String) {
        let token = Data("\(username):\(password)".utf8).base64EncodedString()
        setValue("Basic \(token)", forHTTPHeaderField: "Authorization")
    }

    /// Removes the default `Authorization` field.
    public func clearAuthorizationHeader() {
        setValue(nil, forHTTPHeaderField: "Authorization")
    }

    /// The encoding of form bodies and its `charset`. Default UTF-8.
    public var stringEncoding: String.Encoding {
        get { settings.withLock { $0.stringEncoding } }
        set { settings.withLock { $0.stringEncoding = newValue } }
    }

    /// Methods whose parameters go to the query. Default GET, HEAD, DELETE.
    public var httpMethodsEncodingParametersInURI: Set<String> {
        get { settings.withLock { $0.methodsInURI } }
        set { settings.withLock { $0.methodsInURI = Set(newValue.map { $0.uppercased() }) } }
    }

    /// Copied to requests when set. Default unset (the request's own, 60 s).
    public var timeoutInterval: TimeInterval? {
        get { settings.withLock { $0.timeoutInterval } }
        set { settings.withLock { $0.timeoutInterval = newValue } }
    }

    /// Copied to requests when set. HTTPOperations keeps no response cache: every policy
    /// loads from the network, except `.returnCacheDataDontLoad`, which forbids it, so such
    /// a request fails with `URLError(.resourceUnavailable)` without sending anything.
    public var cachePolicy: URLRequest.CachePolicy? {
        get { settings.withLock { $0.cachePolicy } }
        set { settings.withLock { $0.cachePolicy = newValue } }
    }

    /// Copied to requests when set. A request whose `httpShouldHandleCookies` is false neither
    /// sends nor stores cookies of the operation's ``CookieStore``; without a store, no cookie
    /// is kept whatever this says.
    public var httpShouldHandleCookies: Bool? {
        get { settings.withLock { $0.httpShouldHandleCookies } }
        set { settings.withLock { $0.httpShouldHandleCookies = newValue } }
    }

    /// Copied to requests when set, and **ignored**: Linux servers have no cellular interface
    /// that this library could tell apart.
    public var allowsCellularAccess: Bool? {
        get { settings.withLock { $0.allowsCellularAccess } }
        set { settings.withLock { $0.allowsCellularAccess = newValue } }
    }

    /// Replaces the AFNetworking query-string rules (``QueryString``) with your own.
    public func setQueryStringSerialization(_ block: QueryStringSerialization?) {
        settings.withLock { $0.queryStringSerialization = block }
    }

    // MARK: - Building requests

    /// A request for `method` and `urlString` with `parameters` encoded.
    ///
    /// - Throws: ``RequestSerializationError`` for a URL that does not parse or parameters
    ///   that cannot be encoded; ``SecurityError`` for a method or header field holding CR,
    ///   LF or NUL.
    open func request(method: String, urlString: String, parameters: Any? = nil) throws -> URLRequest {
        guard let url = URL(string: urlString) else {
            throw RequestSerializationError(.invalidURL(urlString))
        }
        var request = URLRequest(url: url)
        request.httpMethod = method.uppercased()
        return try self.request(bySerializing: request, withParameters: parameters)
    }

    /// `request` with the default header fields and properties filled in, and `parameters` in
    /// the query or a form body.
    open func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        try checkDefaultFields()
        var request = applyingDefaults(to: request)
        try Self.checkFields(of: request)
        guard let parameters else { return request }
        let query = try queryString(for: request, parameters: parameters)
        if usesQuery(request) {
            if !query.isEmpty, let url = request.url {
                let separator = url.query == nil ? "?" : "&"
                request.url = URL(string: url.absoluteString + separator + query)
            }
        } else {
            if request.value(forHTTPHeaderField: "Content-Type") == nil {
                request.setValue("application/x-www-form-urlencoded; charset=\(charset)", forHTTPHeaderField: "Content-Type")
            }
            guard let body = query.data(using: stringEncoding) else {
                throw RequestSerializationError(.unencodableString)
            }
            request.httpBody = body
        }
        return request
    }

    /// Throws ``SecurityError`` `.invalidHeaderField` when a default header field set with
    /// ``setValue(_:forHTTPHeaderField:)`` holds CR, LF or NUL. (Foundation's `URLRequest`
    /// silently drops such a value, so it must be caught here, before it is applied.)
    func checkDefaultFields() throws {
        for (name, value) in settings.withLock({ $0.headers }) {
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
    public func usesQuery(_ request: URLRequest) -> Bool {
        httpMethodsEncodingParametersInURI.contains((request.httpMethod ?? "GET").uppercased())
    }

    /// `request` with the default header fields and properties where it has none.
    public func applyingDefaults(to request: URLRequest) -> URLRequest {
        var request = request
        let settings = settings.withLock { $0 }
        if let own = request.allHTTPHeaderFields, !own.isEmpty {
            let missing = settings.preparedHeaders.filter { field, _ in !own.keys.contains { fieldNamesMatch($0, field) } }
            if !missing.isEmpty { request.allHTTPHeaderFields = own.merging(missing) { mine, _ in mine } }
        } else if !settings.preparedHeaders.isEmpty {
            request.allHTTPHeaderFields = settings.preparedHeaders
        }
        if let timeout = settings.timeoutInterval { request.timeoutInterval = timeout }
        if let policy = settings.cachePolicy { request.cachePolicy = policy }
        if let cookies = settings.httpShouldHandleCookies { request.httpShouldHandleCookies = cookies }
        if let cellular = settings.allowsCellularAccess { request.allowsCellularAccess = cellular }
        return request
    }

    private func queryString(for request: URLRequest, parameters: Any) throws -> String {
        guard let block = settings.withLock({ $0.queryStringSerialization }) else {
            return QueryString.make(from: parameters)
        }
        do {
            return try block(request, parameters)
        } catch {
            throw RequestSerializationError(.queryStringFailed(detail: "\(error)"), underlying: error)
        }
    }

    /// The IANA name of ``stringEncoding``.
    var charset: String {
        switch stringEncoding {
        case .utf8: "utf-8"
        case .isoLatin1: "iso-8859-1"
        case .ascii: "us-ascii"
        case .utf16: "utf-16"
        case .windowsCP1252: "windows-1252"
        default: "utf-8"
        }
    }
}
