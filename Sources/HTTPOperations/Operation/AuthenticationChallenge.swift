import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server's request for credentials: a 401 (or a proxy's 407) response.
public struct AuthenticationChallenge: Sendable {
    /// The response that carries the challenge.
    public let response: HTTPURLResponse
    /// How many credentials were already sent for this operation and refused.
    public let previousFailureCount: Int

    /// Whether a proxy asked (407), rather than the origin server (401).
    public var isProxyChallenge: Bool { response.statusCode == 407 }

    /// The challenge as the server sent it: `WWW-Authenticate` (or `Proxy-Authenticate`).
    public var challengeHeader: String? {
        response.value(forHTTPHeaderField: isProxyChallenge ? "Proxy-Authenticate" : "WWW-Authenticate")
    }

    /// The authentication scheme the server asked for, such as `Basic` or `Digest`.
    public var authenticationMethod: String? {
        challengeHeader?.split(separator: " ", maxSplits: 1).first.map(String.init)
    }

    /// The `realm` parameter of the challenge, when there is one.
    public var realm: String? {
        guard let header = challengeHeader, let range = header.range(of: "realm=", options: .caseInsensitive) else {
            return nil
        }
        let rest = header[range.upperBound...]
        if rest.first == "\"" {
            return rest.dropFirst().prefix { $0 != "\"" }.description
        }
        return rest.prefix { $0 != "," && $0 != " " }.description
    }
}
