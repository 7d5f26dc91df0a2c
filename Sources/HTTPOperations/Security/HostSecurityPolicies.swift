import Foundation

/// Which ``SecurityPolicy`` applies to which host: a policy per host name, and one for every
/// other host. A lax policy for a development host therefore never applies to another host,
/// not even one a redirect leads to.
public struct HostSecurityPolicies: Sendable, Hashable {
    /// The policy of every host not listed in ``byHost``. Default ``SecurityPolicy/default``.
    public var fallback: SecurityPolicy
    /// Policies by host, as libcurl connects to it: case-insensitively, without
    /// a trailing dot (`pinned.example.com.` is `pinned.example.com`, as DNS has it), and an
    /// IP address in any spelling as the address (`127.1`, `2130706433` and `0x7f000001` are
    /// `127.0.0.1`). Default empty.
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

    /// `host` as the policies are keyed: as curl connects to it (a request to `127.1` goes
    /// to `127.0.0.1`, and must not escape its policy by the spelling).
    static func normalized(_ host: String) -> String {
        HostName.canonical(host)
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
