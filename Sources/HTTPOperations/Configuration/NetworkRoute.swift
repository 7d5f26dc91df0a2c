import Foundation

/// How an operation's connections reach the origin server: through which proxy (or none),
/// over a Unix domain socket, or to another address than DNS gives for a host.
///
/// The default is what a command-line tool does: straight to the URL's host, through the
/// proxy the environment names (``ProxyConfiguration/environment``). Set it in a manager's
/// ``HTTPRequestOperationManager/defaultConfiguration`` for every operation it makes, or in one
/// operation's ``URLConnectionOperation/configuration`` (``OperationConfiguration/route``).
public struct NetworkRoute: Sendable, Equatable {
    /// Which proxy the requests go through. Default ``ProxyConfiguration/environment``.
    public var proxy: ProxyConfiguration
    /// A Unix domain socket to connect to instead of the URL's host and port
    /// (`CURLOPT_UNIX_SOCKET_PATH`); the URL still gives the `Host` header and the path.
    /// That is how a client talks to a local daemon (Docker, a sidecar) that listens on a
    /// socket file. When set, no proxy is used.
    public var unixSocketPath: String?
    /// Host names connected to at another address (`CURLOPT_CONNECT_TO`), for this route
    /// only: the URL, the `Host` header, TLS's server name and the certificate check keep
    /// the original name.
    public var hostOverrides: [HostOverride]

    /// A route; every argument defaults to the default route's.
    public init(proxy: ProxyConfiguration = .environment, unixSocketPath: String? = nil, hostOverrides: [HostOverride] = []) {
        self.proxy = proxy
        self.unixSocketPath = unixSocketPath
        self.hostOverrides = hostOverrides
    }

    /// Straight to the host, through the environment's proxy.
    public static let `default` = NetworkRoute()

    /// Whether this is the default route (checked for every request, without allocating).
    var isDefault: Bool {
        if case .environment = proxy, unixSocketPath == nil, hostOverrides.isEmpty { return true }
        return false
    }
}

/// Which proxy requests go through.
public enum ProxyConfiguration: Sendable, Equatable {
    /// The one the environment names, as curl reads it: `http_proxy` for http URLs,
    /// `https_proxy` (or `HTTPS_PROXY`) for https, `all_proxy` (or `ALL_PROXY`) for both,
    /// and `no_proxy` (or `NO_PROXY`) for hosts to reach directly. `HTTP_PROXY` in capitals
    /// is ignored on purpose (a CGI program receives a request's `Proxy:` header under that
    /// name). The default.
    case environment
    /// No proxy, whatever the environment says.
    case direct
    /// This proxy.
    case proxy(Proxy)
}

/// A proxy server: an HTTP proxy (`http://`), an HTTP proxy spoken to over TLS
/// (`https://`), or a SOCKS5 proxy (`socks5://`, which resolves host names here, or
/// `socks5h://`, which lets the proxy resolve them).
///
/// https URLs go through an HTTP proxy in a `CONNECT` tunnel, so the proxy never sees their
/// contents; http URLs are sent to it whole.
public struct Proxy: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The proxy's URL: scheme, host and port (`http://proxy.internal:3128`).
    public let url: URL
    /// The user name sent to the proxy (`Proxy-Authorization`, Basic or Digest as the proxy
    /// asks), never to the origin.
    public var user: String?
    /// The password that goes with ``user``.
    public var password: String?
    /// Hosts reached directly instead, in `no_proxy`'s syntax: a host name matches itself and
    /// its subdomains, `*` matches all, and an IP address or CIDR range (`10.0.0.0/8`)
    /// matches addresses. The only hosts that go around this proxy: the environment's
    /// `NO_PROXY` is not read for it.
    public var bypassedHosts: [String]

    /// The schemes a proxy URL may have.
    public static let schemes: Set<String> = ["http", "https", "socks5", "socks5h"]

    /// A proxy at `url`.
    ///
    /// - Throws: `URLError(.unsupportedURL)` when the scheme is not one of ``schemes``, and
    ///   `URLError(.badURL)` when the URL has no host.
    public init(_ url: URL, user: String? = nil, password: String? = nil, bypassedHosts: [String] = []) throws {
        guard let scheme = url.scheme?.lowercased(), Self.schemes.contains(scheme) else {
            throw URLError(.unsupportedURL, url: url,
                           description: "A proxy URL must start with http, https, socks5 or socks5h: \(url.absoluteString)")
        }
        guard let host = url.host, !host.isEmpty else {
            throw URLError(.badURL, url: url, description: "The proxy URL \(url.absoluteString) has no host.")
        }
        self.url = url
        self.user = user
        self.password = password
        self.bypassedHosts = bypassedHosts
    }

    /// The proxy's URL (without a password in it), user and bypassed hosts; never a password.
    public var description: String {
        "Proxy(\(shownURL), user: \(user ?? "none"), password: \(password == nil ? "none" : "<redacted>"), "
            + "bypassedHosts: \(bypassedHosts))"
    }

    /// What `dump` and reflection show: the passwords redacted.
    public var customMirror: Mirror {
        Mirror(self, children: ["url": shownURL, "user": user as Any, "password": password == nil ? "none" : "<redacted>",
                                "bypassedHosts": bypassedHosts], displayStyle: .struct)
    }

    /// `url` as shown: a password in it (`http://u:secret@proxy`) replaced.
    private var shownURL: String {
        guard url.password != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        components.password = "redacted"
        return components.string ?? "(a proxy URL with a password)"
    }
}

/// One host (and port) connected to at another address: `CURLOPT_CONNECT_TO`, the
/// equivalent of curl's `--resolve` that stays with the route instead of entering a shared
/// DNS cache.
public struct HostOverride: Sendable, Equatable {
    /// The host name as URLs name it.
    public var host: String
    /// The port it applies to; nil for every port.
    public var port: Int?
    /// Where to connect instead: an IP address or another host name.
    public var address: String
    /// The port to connect to there; nil for the URL's.
    public var addressPort: Int?

    /// Connects to `address` (and `addressPort`) whenever a URL names `host` (and `port`).
    public init(host: String, port: Int? = nil, address: String, addressPort: Int? = nil) {
        self.host = host
        self.port = port
        self.address = address
        self.addressPort = addressPort
    }

    /// Parses curl's `--resolve` form, `HOST:PORT:ADDRESS`: an IPv6 address may stand in
    /// brackets or bare (`example.com:443:[::1]`, `example.com:443:::1`).
    ///
    /// - Throws: `URLError(.badURL)` when the text does not have that form.
    public init(resolving text: String) throws {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port), !parts[2].isEmpty else {
            throw URLError(.badURL, url: nil, description: "Expected HOST:PORT:ADDRESS, got \(text)")
        }
        var address = String(parts[2])
        if address.hasPrefix("["), address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
        self.init(host: String(parts[0]), port: port, address: address)
    }

    /// The `CURLOPT_CONNECT_TO` entry: `HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT`, with an
    /// IPv6 address in brackets and an empty field for "any" or "the same".
    var connectToEntry: String {
        let target = address.contains(":") ? "[\(address)]" : address
        return "\(host):\(port.map(String.init) ?? ""):\(target):\(addressPort.map(String.init) ?? "")"
    }
}
