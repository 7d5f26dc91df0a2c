import ArgumentParser
import Foundation
import HTTPOperations

/// How requests reach the server: proxy, Unix socket, host overrides (curl's spelling).
struct RouteOptions: ParsableArguments {
    @Option(name: [.customShort("x"), .customLong("proxy")],
            help: ArgumentHelp("Use this proxy: http://, https://, socks5:// or socks5h:// HOST:PORT. "
                               + "Without it, http_proxy, https_proxy, all_proxy and no_proxy apply; '' turns proxies off.",
                               valueName: "url"))
    var proxy: String?

    @Option(name: [.customShort("U"), .customLong("proxy-user")], help: ArgumentHelp("The proxy's user and password, as USER:PASSWORD.", valueName: "user:password"))
    var proxyUser: String?

    @Option(help: ArgumentHelp("Hosts to reach without the proxy, comma-separated (no_proxy's syntax).", valueName: "hosts"))
    var noproxy: String?

    @Option(name: .customLong("unix-socket"), help: ArgumentHelp("Connect to this Unix domain socket instead of the URL's host.", valueName: "path"))
    var unixSocket: String?

    @Option(help: ArgumentHelp("Connect to ADDRESS whenever the URL names HOST:PORT. Repeatable.", valueName: "host:port:address"))
    var resolve: [String] = []

    func validate() throws {
        if proxyUser != nil, proxy == nil || proxy == "" {
            throw ValidationError("--proxy-user needs --proxy")
        }
        if noproxy != nil, proxy == nil || proxy == "" {
            throw ValidationError("--noproxy needs --proxy (the environment's no_proxy applies otherwise)")
        }
        if let user = proxyUser, !user.contains(":") {
            throw ValidationError("--proxy-user takes USER:PASSWORD")
        }
        do {
            _ = try route()
        } catch let error as URLError {
            throw ValidationError(error.localizedDescription)
        }
    }

    /// The route these options describe.
    ///
    /// - Throws: `URLError` for a proxy URL or a `--resolve` entry that is malformed.
    func route() throws -> NetworkRoute {
        var route = NetworkRoute(unixSocketPath: unixSocket)
        route.hostOverrides = try resolve.map { try HostOverride(resolving: $0) }
        switch proxy {
        case nil: break
        case "": route.proxy = .direct
        case let proxy?:
            guard let url = URL(string: proxy.contains("://") ? proxy : "http://" + proxy) else {
                throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "'\(proxy)' is not a proxy URL"])
            }
            let credential = proxyUser.map { $0.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init) }
            let bypassed = noproxy.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
            route.proxy = .proxy(try Proxy(url, user: credential?.first, password: credential?.last, bypassedHosts: bypassed))
        }
        return route
    }
}
