import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything one curl transfer needs, worked out from a `URLRequest` before it reaches the
/// network thread, so the thread does no Foundation parsing.
///
/// Noncopyable: one transfer's request has one owner at a time (its builder, the driver's
/// first transfer, then the ``CurlTransfer`` that sends it), and the compiler proves it is
/// moved between them, never copied. A copy retains and releases every reference it holds,
/// about a dozen (Docs/Performance.md, "The transfer request, moved").
struct TransferRequest: ~Copyable, Sendable {

    /// The URL to fetch.
    var url: URL
    /// The method, upper-cased as sent (`GET`, `POST`, ...).
    var method: String
    /// Header fields to send, in order.
    var headers: [(name: String, value: String)]
    /// The body to send.
    var body: RequestBody
    /// Idle timeout: the longest wait for a connection, or for the next byte once connected.
    /// Always one curl keeps (see ``idleTimeout(for:)``).
    var timeout: TimeInterval
    /// User name and password for Basic or Digest authentication, negotiated by curl.
    var credential: (user: String, password: String)?
    /// The proxy's user name and password, from the answer to its 407 challenge; sent to the
    /// proxy only.
    var proxyCredential: (user: String, password: String)?
    /// Proxy, Unix socket and host overrides.
    var route = NetworkRoute.default
    /// The cookies to send and keep; nil when the operation has no store or the request's
    /// `httpShouldHandleCookies` is false.
    var cookieStore: CookieStore?
    /// What TLS certificates to trust.
    var securityPolicy = SecurityPolicy.default
    /// The operation's server-trust block and its approvals, when it has one.
    var serverTrustEvaluation: ServerTrustEvaluation?
    /// Whether the method may be sent twice without changing anything more on the server
    /// (RFC 9110 §9.2.2). A request whose method may not is sent at most once by a transfer:
    /// curl's own resend on a fresh connection is refused (``CurlTransfer``).
    var isIdempotent: Bool { Self.idempotentMethods.contains(method) }
    /// Methods that may be sent again without changing anything on the server (RFC 9110 §9.2.2).
    static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"]
    /// The URL schemes this transfer may use (`CURLOPT_PROTOCOLS_STR`), lower-case; nil for
    /// http and https, the default (checked without hashing anything, on every request).
    var allowedSchemes: Set<String>?
    /// The schemes allowed unless an operation allows more: http and https.
    static let defaultSchemes: Set<String> = ["http", "https"]

    /// `schemes` as stored: lower-case, nil when they are the default.
    static func normalized(_ schemes: Set<String>) -> Set<String>? {
        let lowered = Set(schemes.map { $0.lowercased() })
        return lowered == defaultSchemes ? nil : lowered
    }
    /// The serial queue a `.stream` body is read on (see ``BodyReader``); one per operation,
    /// so the reads of its transfers never overlap. nil: a queue of the transfer's own.
    var bodyQueue: DispatchQueue?
    /// The `.stream` body was sent by an earlier transfer: rewind it before reading.
    var rewindsBody = false
    /// The trailer fields to send after a `.stream` body of unknown length (sent chunked):
    /// asked for on the body's queue once the stream ended (see ``BodyReader``).
    var requestTrailers: RequestTrailersBlock?
    /// The highest send rate a ``RewindableBodyStream`` body asks for; read here, off the
    /// network thread (a conformance may be user code).
    var maximumSendRate: Int64?

    /// Builds the transfer for `request`.
    ///
    /// - Throws: `URLError(.badURL)` when the request has no URL, or an http(s) URL without a
    ///   host; `URLError(.unsupportedURL)` when it has no scheme; `URLError(.resourceUnavailable)`
    ///   for `.returnCacheDataDontLoad` (the operation's cache, if any, had nothing); ``SecurityError`` when the scheme
    ///   is not in `allowedSchemes` (`.schemeNotAllowed`), or the method or a header field
    ///   would split the request (`.invalidMethod`, `.invalidHeaderField`), or the libcurl
    ///   loaded is too old (`.unsupportedLibcurl`).
    init(_ request: URLRequest, credential: URLCredential?, allowedSchemes: Set<String>? = nil) throws {
        guard let url = request.url else {
            throw URLError(.badURL, url: nil, description: "The request has no URL.")
        }
        if let problem = Libcurl.versionProblem {
            throw SecurityError(problem.reason, url: url)
        }
        guard let scheme = url.scheme?.lowercased(), !scheme.isEmpty else {
            throw URLError(.unsupportedURL, url: url, description: "The URL \(url.absoluteString) has no scheme.")
        }
        guard allowedSchemes?.contains(scheme) ?? (scheme == "http" || scheme == "https") else {
            throw SecurityError(.schemeNotAllowed(scheme), url: url)
        }
        if scheme == "http" || scheme == "https", (url.host ?? "").isEmpty {
            throw URLError(.badURL, url: url, description: "The URL \(url.absoluteString) has no host.")
        }
        if request.cachePolicy == .returnCacheDataDontLoad {
            // The policy forbids the network: only an operation's HTTPCache could have answered,
            // before any transfer was made (and none did, or the operation has none).
            throw URLError(.resourceUnavailable, url: url,
                           description: "No stored response answers \(url.absoluteString), and .returnCacheDataDontLoad forbids loading it.")
        }
        // Worked out and checked before the value is made: a noncopyable value cannot be
        // left half-initialized by a throw.
        let method = (request.httpMethod ?? "GET").uppercased()
        try HTTPFieldValidation.check(method: method, url: url)
        let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        for (name, value) in headers {
            try HTTPFieldValidation.check(name: name, value: value, url: url)
        }
        let body: RequestBody
        var maximumSendRate: Int64?
        if let stream = request.httpBodyStream {
            let declared = request.value(forHTTPHeaderField: "Content-Length").flatMap { HTTPDecimal.parse($0) }
                ?? (stream as? StreamedRequestBody)?.length
            body = .stream(Handover(stream), length: declared)
            maximumSendRate = (stream as? RewindableBodyStream)?.maximumSendRate
        } else if let data = request.httpBody {
            body = .data(data)
        } else {
            body = .none
        }
        try RequestFraming.check(headers, body: body, url: url)
        self.init(url: url, method: method, headers: headers, body: body, timeout: Self.idleTimeout(for: request.timeoutInterval),
                  credential: credential.flatMap { credential in credential.user.map { ($0, credential.password ?? "") } },
                  allowedSchemes: allowedSchemes, maximumSendRate: maximumSendRate)
    }

    /// The transfer of a request already checked.
    private init(url: URL, method: String, headers: [(name: String, value: String)], body: RequestBody, timeout: TimeInterval,
                 credential: (user: String, password: String)?, allowedSchemes: Set<String>?, maximumSendRate: Int64?) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.credential = credential
        self.allowedSchemes = allowedSchemes
        self.maximumSendRate = maximumSendRate
    }

    /// The longest idle timeout: 2,147,483 s, about 24.8 days, the most libcurl 7.88 accepts
    /// for `CURLOPT_CONNECTTIMEOUT` (it refuses more with `CURLE_BAD_FUNCTION_ARGUMENT`).
    /// It accepts any `CURLOPT_CONNECTTIMEOUT_MS` but keeps timeouts in a C
    /// `unsigned int` of milliseconds, narrowing larger values as each version sees fit: we
    /// stay within the limit it states.
    static let longestTimeout = TimeInterval(Int32.max / 1000)

    /// `interval` (a `URLRequest.timeoutInterval`) as the idle timeout given to curl: 60 s,
    /// URLRequest's default, when it is not positive or is NaN; ``longestTimeout`` when it is
    /// longer, infinity included. Converting `.infinity` to whole milliseconds traps, and on
    /// the network thread that takes the process down, so every value curl is given from it
    /// comes through here.
    static func idleTimeout(for interval: TimeInterval) -> TimeInterval {
        guard interval > 0 else { return 60 }  // false for NaN too
        return min(interval, longestTimeout)
    }

    /// Whether the method is one that carries a body even when it is empty, so curl sends
    /// `Content-Length: 0` as servers expect.
    var methodExpectsBody: Bool {
        ["POST", "PUT", "PATCH"].contains(method)
    }

    /// The value of header `name`, compared case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { fieldNamesMatch($0.name, name) }?.value
    }

    /// Whether this is a plain transfer: a GET without a body, credentials, schemes, route or
    /// cookies of its own, whose security policy at most trusts its own authorities. Such a
    /// transfer sets the same options as every other plain one under the same policy,
    /// differing only in values each sets again, so its handle can serve the next one under
    /// that policy without a reset (see ``EasyHandlePool``).
    var isPlain: Bool {
        method == "GET" && body.isNone && credential == nil && securityPolicy.onlyNamesItsAuthorities && allowedSchemes == nil
            && serverTrustEvaluation == nil && route.isDefault && proxyCredential == nil && cookieStore == nil
    }
}

/// A request body, as curl's read callback will serve it.
enum RequestBody {
    /// No body.
    case none
    /// Bytes in memory; rewindable.
    case data(Data)
    /// A stream read as curl asks for bytes; `length` nil means chunked transfer-encoding.
    /// Handed over whole: Foundation does not mark `InputStream` `Sendable`, and once the
    /// request is built only the network thread (and the body reader it starts) reads it.
    case stream(Handover<InputStream>, length: Int64?)
}

extension RequestBody {
    /// Whether there is no body at all.
    var isNone: Bool {
        if case .none = self { true } else { false }
    }

    /// The body's length when known up front.
    var length: Int64? {
        switch self {
        case .none: 0
        case .data(let data): Int64(data.count)
        case .stream(_, let length): length
        }
    }
}
