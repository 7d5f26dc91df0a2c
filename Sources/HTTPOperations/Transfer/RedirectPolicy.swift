import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a redirect turns one request into the next, per RFC 9110 §15.4 and what browsers and
/// curl do. Pure: tested without a network.
enum RedirectPolicy {
    /// The status codes that redirect with a `Location`.
    static let redirectStatusCodes: Set<Int> = [301, 302, 303, 307, 308]

    /// Header fields that describe a request body, dropped when the body is.
    private static let bodyHeaderFields = ["Content-Type", "Content-Length", "Content-Encoding", "Content-Language", "Content-Location"]

    /// Header fields that carry credentials, dropped when the redirect leaves the origin
    /// (with any the caller lists as secret, see ``OperationConfiguration/sensitiveHeaderFields``).
    static let credentialHeaderFields: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// The request to send after `previous` was answered with `status` pointing at `location`.
    ///
    /// - 303 turns any method but HEAD into GET without a body; 301 and 302 do the same for
    ///   POST (as every client does, although the RFC allows either); 307 and 308 keep the
    ///   method and body.
    /// - Leaving the origin (scheme, host, port) drops the credential header fields and
    ///   `sensitiveFields` (lower-case names), and a caller's `Host`, which named the first
    ///   origin (curl writes the new one).
    ///
    /// - Throws: ``SecurityError`` `.insecureRedirect` when the request would carry its body
    ///   from https to plain http.
    static func request(following status: Int, from previous: URLRequest, to location: URL,
                        sensitiveFields: Set<String> = []) throws -> URLRequest {
        var next = previous
        next.url = location
        let method = (previous.httpMethod ?? "GET").uppercased()
        if (status == 303 && method != "HEAD") || ((status == 301 || status == 302) && method == "POST") {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.httpBodyStream = nil
            for field in bodyHeaderFields {
                next.setValue(nil, forHTTPHeaderField: field)
            }
        }
        let carriesBody = next.httpBody != nil || next.httpBodyStream != nil
        if carriesBody, previous.url?.scheme?.lowercased() == "https", location.scheme?.lowercased() == "http" {
            throw SecurityError(.insecureRedirect(from: previous.url!, to: location), url: previous.url)
        }
        if let from = previous.url, !isSameOrigin(from, location) {
            let dropped = credentialHeaderFields.union(sensitiveFields).union(["host"])
            for field in (next.allHTTPHeaderFields ?? [:]).keys where dropped.contains(field.lowercased()) {
                next.setValue(nil, forHTTPHeaderField: field)
            }
        }
        return next
    }

    /// Whether two URLs share scheme, host (as curl connects to it) and port (default ports
    /// made explicit).
    static func isSameOrigin(_ lhs: URL, _ rhs: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int?) {
            let scheme = url.scheme?.lowercased() ?? ""
            let defaultPort: Int? = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
            return (scheme, url.host.map(HostName.canonical) ?? "", url.port ?? defaultPort)
        }
        return origin(lhs) == origin(rhs)
    }
}
