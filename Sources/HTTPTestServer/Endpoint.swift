import Foundation

/// What the test server can be asked for. Build URLs with ``TestServer/url(_:)`` so a test
/// reads `server.url(.bytes(10_000_000))` rather than a string.
public enum Endpoint: Sendable, Equatable {
    /// An empty response with the given status code.
    case status(Int)
    /// A JSON description of the request: method, path, query, headers, body.
    case echo
    /// A JSON body `{"status": code, "message": ...}` with that status code.
    case jsonStatus(Int)
    /// Counts the request body without keeping it: `{"bodyLength": n, "contentLength": "n"}`.
    case upload
    /// Waits, then answers 200 with a short body.
    case delay(milliseconds: Int)
    /// `count` bytes of ``TestServer/pattern(offset:)`` with a `Content-Length`.
    case bytes(Int)
    /// The same bytes with chunked transfer-encoding and no length.
    case chunked(Int)
    /// A chain of `times` 302 redirects that ends in a 200 whose body is `redirected`.
    case redirect(times: Int)
    /// One redirect with `status` to `location` (absolute, or a path on this server).
    case redirectTo(String, status: Int)
    /// 200 when the request carries Basic credentials `user`:`password`, else a 401 challenge.
    case basicAuth(user: String, password: String)
    /// `count` pattern bytes, gzip-encoded when the client accepts it.
    case gzip(Int)
    /// Announces `total` bytes, sends the first `after`, then closes the connection.
    case drop(total: Int, after: Int)
    /// A text body in the given charset, declared in `Content-Type`.
    case text(String, charset: String)
    /// Answers `status` (with `Retry-After: retryAfter` when given, and a body saying so) to
    /// the first `failures` requests for `key`, then 200 with `count` pattern bytes. Its
    /// requests are counted under `key` (``TestServer/requestCount(forResumableKey:)``).
    case flaky(key: String, failures: Int, status: Int, retryAfter: String?, count: Int)
    /// `size` bytes that honour `Range` and `If-Range`, with the validators and faults of
    /// `options`. Version n of the resource is ``ResumableOptions/content(version:offset:count:)``.
    case resumable(size: Int, options: ResumableOptions)
    /// A small body `<key> version <n>` for the HTTP cache's tests: with `Cache-Control:
    /// cacheControl` when given, an `ETag` naming the version and a `Last-Modified` when
    /// asked, `Vary: vary` (the body then names the request's value of that field); a
    /// conditional request naming the current version gets a 304. Requests are counted
    /// under `key`, 304s under `key#304`; ``TestServer/changeCacheable(_:)`` makes a new version.
    case cacheable(key: String, cacheControl: String? = nil, etag: Bool = false, lastModified: Bool = false, vary: String? = nil)

    /// A Server-Sent Events feed (see ``EventFeed``); its requests are counted under `key`
    /// (``TestServer/requestCount(forEventFeed:)``).
    case events(key: String, feed: EventFeed)

    /// The path and query that select this endpoint.
    var path: String {
        switch self {
        case .status(let code): "/status/\(code)"
        case .echo: "/echo"
        case .flaky(let key, let failures, let status, let retryAfter, let count):
            "/flaky/\(key)/\(failures)/\(status)?count=\(count)"
                + (retryAfter.map { "&retryAfter=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)" } ?? "")
        case .upload: "/upload"
        case .jsonStatus(let code): "/json-status/\(code)"
        case .delay(let milliseconds): "/delay/\(milliseconds)"
        case .bytes(let count): "/bytes/\(count)"
        case .chunked(let count): "/chunked/\(count)"
        case .redirect(let times): "/redirect/\(times)"
        case .redirectTo(let location, let status):
            "/redirect-to?status=\(status)&url=\(location.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? location)"
        case .basicAuth(let user, let password): "/basic-auth/\(user)/\(password)"
        case .gzip(let count): "/gzip/\(count)"
        case .drop(let total, let after): "/drop/\(total)/\(after)"
        case .resumable(let size, let options):
            "/resumable/\(size)?\(options.query)"
        case .cacheable(let key, let cacheControl, let etag, let lastModified, let vary):
            "/cacheable/\(key)?etag=\(etag ? 1 : 0)&lastModified=\(lastModified ? 1 : 0)"
                + (cacheControl.map { "&cc=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)" } ?? "")
                + (vary.map { "&vary=\($0)" } ?? "")
        case .events(let key, let feed): "/events/\(key)?\(feed.query)"
        case .text(let text, let charset):
            "/text?charset=\(charset)&text=\(text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text)"
        }
    }
}
