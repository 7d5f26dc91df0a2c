import Foundation
#if canImport(FoundationNetworking)
// URLRequest lives in FoundationNetworking on Linux.
import FoundationNetworking
#endif

/// How the cache reads a `URLRequest`.
extension HTTPCache {
    /// The cache key of a URL: `"GET "` and the URL as ``storedURL(_:)`` writes it.
    /// - Parameter url: The request URL.
    /// - Returns: The key, e.g. `GET https://example.com/a?b=1`.
    static func cacheKey(for url: URL) -> String {
        "GET " + storedURL(url)
    }

    /// The URL as the cache keeps it: without the fragment, which is never sent and so
    /// cannot change the response (§2), and without a `user:password@`, which is a
    /// credential (the operation stands it in as `Authorization`, kept as a digest). Its
    /// origin is spelled once, as curl connects to it: the scheme lower-cased, the host as
    /// ``HostName/canonical(_:)`` writes it, no default port. Else `127.1` and `127.0.0.1`
    /// would be two entries, and a POST to one would not invalidate the other (§4.4).
    static func storedURL(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url.absoluteString }
        components.user = nil
        components.password = nil
        components.fragment = nil
        let scheme = components.scheme?.lowercased()
        components.scheme = scheme
        // From the encoded host, never the decoded one: Foundation reads an international name
        // or a zone id back decoded, and traps when such text is set as the encoded host.
        if let host = components.percentEncodedHost, !host.isEmpty {
            let canonical = HostName.canonical(host)
            let spelled = canonical.contains(":") ? "[\(canonical)]" : canonical
            if spelled != host, spelled.utf8.allSatisfy(Self.mayStandInEncodedHost) {
                components.percentEncodedHost = spelled
            }
        }
        if (scheme == "http" && components.port == 80) || (scheme == "https" && components.port == 443) {
            components.port = nil
        }
        return components.url?.absoluteString ?? url.absoluteString
    }

    /// The bytes an encoded host may hold (RFC 3986's unreserved and sub-delims, `%` of an
    /// escape, and the `[`, `]` and `:` of an IP literal).
    private static func mayStandInEncodedHost(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "-._~%!$&'()*+,;=:[]".utf8.contains(byte)
        }
    }

    /// The request method, uppercased, "GET" when unset or empty. Uppercasing is lenient
    /// (methods are case-sensitive, RFC 9110 §9.1) but matches how the transport sends
    /// them and keeps a lowercase "post" from slipping past invalidation.
    /// - Parameter request: The request.
    /// - Returns: The method.
    static func method(of request: URLRequest) -> String {
        let method = (request.httpMethod ?? "").trimmingCharacters(in: .whitespaces).uppercased()
        return method.isEmpty ? "GET" : method
    }

    /// The request's header fields as a list, sorted by lowercased name so the result
    /// does not depend on dictionary order (names compare case-insensitively anyway).
    /// - Parameter request: The request.
    /// - Returns: The header fields.
    static func headerFields(of request: URLRequest) -> [(name: String, value: String)] {
        (request.allHTTPHeaderFields ?? [:])
            .map { (name: $0.key, value: $0.value) }
            .sorted { $0.name.lowercased() < $1.name.lowercased() }
    }

    /// Maps Foundation's cache policy onto the cache's (see `CacheRequestPolicy`).
    /// - Parameter policy: The request's `cachePolicy`.
    /// - Returns: The policy, and whether every stored response must be validated first
    ///   (`.reloadRevalidatingCacheData`, handled as a request `no-cache`, §5.2.1.4).
    static func requestPolicy(for policy: URLRequest.CachePolicy) -> (CacheRequestPolicy, forcesValidation: Bool) {
        switch policy {
        case .useProtocolCachePolicy: return (.useProtocol, false)
        case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData: return (.reloadIgnoringCache, false)
        case .returnCacheDataElseLoad: return (.returnCacheDataElseLoad, false)
        case .returnCacheDataDontLoad: return (.returnCacheDataDontLoad, false)
        case .reloadRevalidatingCacheData: return (.useProtocol, true)
        @unknown default: return (.useProtocol, false)
        }
    }
}
