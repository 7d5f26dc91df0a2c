import Foundation

/// Which ``SecurityPolicy`` applies to which host: a policy per host name, and one for every
/// other host. A lax policy for a development host therefore never applies to another host,
/// not even one a redirect leads to.
public struct HostSecurityPolicies: Sendable, Hashable {
    /// The policy of every host not listed in ``byHost``. Default ``SecurityPolicy/default``.
    public var fallback: SecurityPolicy
    /// Policies by host name (compared case-insensitively and without a trailing dot:
    /// `pinned.example.com.` is `pinned.example.com`, as DNS has it; an IP address is a host
    /// name here). Default empty.
    public private(set) var byHost: [String: SecurityPolicy]

    /// Policies with `fallback` for every host and the `byHost` exceptions.
    public init(fallback: SecurityPolicy = .default, byHost: [String: SecurityPolicy] = [:]) {
        self.fallback = fallback
        self.byHost = Dictionary(byHost.map { (Self.normalized($0.key), $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// The policy for `host`.
    public func policy(for host: String?) -> SecurityPolicy {
        // Most managers list no host: no need to lower-case anything.
        guard !byHost.isEmpty, let host else { return fallback }
        return byHost[Self.normalized(host)] ?? fallback
    }

    /// `host` as the policies are keyed: lower-cased, without the trailing dot of a fully
    /// qualified name (a request to `pinned.example.com.` goes to `pinned.example.com`, and
    /// must not escape its policy by the spelling).
    static func normalized(_ host: String) -> String {
        let lowered = host.lowercased()
        return lowered.count > 1 && lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
    }

    /// The policy for the host of `url`, without parsing the host when no host is listed.
    func policy(forHostOf url: URL?) -> SecurityPolicy {
        byHost.isEmpty ? fallback : policy(for: url?.host)
    }

    /// Sets the policy for `host`; nil removes it, so `host` gets ``fallback``.
    public mutating func setPolicy(_ policy: SecurityPolicy?, for host: String) {
        byHost[Self.normalized(host)] = policy
    }
}
