import CCurl
import Foundation

extension CurlTransfer {
    /// Proxy, Unix socket, host overrides and a proxy's credential: set only when the route is
    /// not the default (a handle reset by the pool starts from curl's defaults, which read
    /// the proxy from the environment).
    func configureRoute() {
        let route = request.route
        switch route.proxy {
        case .environment:
            break
        case .direct:
            // An empty string turns proxies off, the environment's included.
            setString(CURLOPT_PROXY, "")
        case .proxy(let proxy):
            setString(CURLOPT_PROXY, proxy.url.absoluteString)
            // Always set: unset, curl reads `NO_PROXY` from the environment, and hosts there
            // would go around the proxy the caller named. An empty list bypasses none.
            setString(CURLOPT_NOPROXY, proxy.bypassedHosts.joined(separator: ","))
            if let user = proxy.user {
                setProxyCredential(user: user, password: proxy.password ?? "")
            }
        }
        if let credential = request.proxyCredential {
            setProxyCredential(user: credential.user, password: credential.password)
        }
        if let path = route.unixSocketPath {
            setString(CURLOPT_UNIX_SOCKET_PATH, path)
        }
        if !route.hostOverrides.isEmpty {
            for override in route.hostOverrides {
                connectToList = curl_slist_append(connectToList, override.connectToEntry)
            }
            ccurl_easy_setopt_pointer(easy, CURLOPT_CONNECT_TO, connectToList)
        }
    }

    /// Credentials for the proxy, never the origin: Basic or Digest, as the proxy asks.
    private func setProxyCredential(user: String, password: String) {
        setString(CURLOPT_PROXYUSERNAME, user)
        setString(CURLOPT_PROXYPASSWORD, password)
        setLong(CURLOPT_PROXYAUTH, ccurl_auth_basic | ccurl_auth_digest)
    }
}
