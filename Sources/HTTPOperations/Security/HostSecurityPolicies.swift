import Foundation

/// Which ``SecurityPolicy`` applies to which host: a policy per host name, and one for every
/// other host. A lax policy for a development host therefore never applies to another host,
/// not even one a redirect leads to.
public struct HostSecurityPolicies: Sendable, Hashable {
    /// The policy of every host not listed in ``byHost``. Default ``SecurityPolicy/default``.
    public var fallback: SecurityPolicy
    /// Policies by host name (compared case-insensitively; an IP address is a host name
    /// here). Default empty.
    public private(set) var byHost: [String: SecurityPolicy]

    /// Policies with `fallback` for every host and the `byHost` exceptions.
    public init(fallback: SecurityPolicy = .default, byHost: [String: SecurityPolicy] = [:]) {
        self.fallback = fallback
        self.byHost = Dictionary(byHost.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// The policy for `host`.
    public func policy(for host: String?) -> SecurityPolicy {
        // Most managers list no host: no need to lower-case anything.
        guard !byHost.isEmpty, let host else { return fallback }
        return byHost[host.lowercased()] ?? fallback
    }

    /// The policy for the host of `url`, without parsing the host when no host is listed.
    func policy(forHostOf url: URL?) -> SecurityPolicy {
        byHost.isEmpty ? fallback : policy(for: url?.host)
    }

    /// Sets the policy for `host`; nil removes it, so `host` gets ``fallback``.
    public mutating func setPolicy(_ policy: SecurityPolicy?, for host: String) {
        byHost[host.lowercased()] = policy
    }
}
