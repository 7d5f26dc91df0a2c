import Foundation

/// The https origins that answered over HTTP/1.x: their requests do not wait for a connection
/// that might multiplex (`CURLOPT_PIPEWAIT`).
///
/// Requests to an https origin wait for the first connection's answer so that, if the origin
/// speaks HTTP/2, they become streams on that one connection (1,000 requests started together
/// opened 1,000 TLS connections without it). libcurl 7.88.1 took the waiting requests up as
/// soon as the TLS handshake said `http/1.1`. libcurl 8 (measured on 8.14.1) takes them up only
/// when a transfer completes: six requests started together to an HTTP/1.1 origin answering
/// in 500 ms ran in two rounds (1.0 s, five connections instead of six), and the curl tool does
/// the same (`curl -Z`: five requests at 1.01–1.06 s; with `--parallel-immediate` all six at
/// 0.51 s). Against an origin that closes every connection, each request waits for the one
/// before (curl issue 15838). Remembering the origins that answered over HTTP/1.x bounds that
/// to the first requests to each origin; an answer over HTTP/2 or 3 makes its requests wait
/// again.
///
/// An origin is remembered per route: through a proxy, a Unix socket or a host override the
/// same host and port may be another server, so what one route taught does not hold for
/// another.
///
/// Owned by ``CurlMulti`` and used on the network thread only, so it needs no lock.
struct HTTP1Origins {
    /// How many origins are remembered. Past it the memory starts again: forgetting an origin
    /// costs its next requests one wait, and a process talking to more origins than this keeps
    /// no unbounded table.
    static let capacity = 1_024

    private var origins = Set<String>()

    /// What a request's URL and route make of it here, worked out once per transfer (the
    /// scheme and host are read from the URL once, not at start and again at completion).
    enum Origin: Equatable {
        /// Not https: never waits (plain http never multiplexes here; curl 7.88 would hold each
        /// request to a new host until the first one's response).
        case plain
        /// https: "host:port", followed by the route when it is not the default one.
        case remembered(String)

        init(_ url: URL, route: NetworkRoute) {
            guard url.scheme?.lowercased() == "https", let host = url.host.map(HostName.canonical) else {
                self = .plain
                return
            }
            let origin = "\(host):\(url.port ?? 443)"
            // Only a request on another route than the default pays for describing it.
            self = .remembered(route.isDefault ? origin : origin + " " + String(describing: route))
        }
    }

    /// Whether a request to `origin` should wait for a connection that might multiplex: an
    /// https request to an origin not known to answer over HTTP/1.x on its route.
    func shouldWaitForMultiplexing(_ origin: Origin) -> Bool {
        switch origin {
        case .plain: false
        case .remembered(let key): !origins.contains(key)
        }
    }

    /// Learns from a completed transfer to `origin` whose answer came over `httpVersion`
    /// ("1.0", "1.1", "2", "3"; nil when no answer came, which teaches nothing).
    mutating func learn(_ origin: Origin, httpVersion: String?) {
        guard case .remembered(let key) = origin, let httpVersion else { return }
        if httpVersion.hasPrefix("1") {
            if origins.count >= Self.capacity, !origins.contains(key) { origins.removeAll(keepingCapacity: true) }
            origins.insert(key)
        } else {
            origins.remove(key)
        }
    }
}
