import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// Requests through real proxies started by the tests: tinyproxy for HTTP (and CONNECT
    /// tunnels for https) and microsocks for SOCKS5. Each test proves the proxy was in the
    /// path: tinyproxy adds `Via`, the authenticating proxies refuse a request without their
    /// credential, and tinyproxy logs every CONNECT.
    @Suite(.enabled(if: (ProxyServers.tinyproxyInstalled && ProxyServers.microsocksInstalled) || ExternalServers.required,
                    "tinyproxy or microsocks is not installed"))
    struct Proxies {
        static func echo(through route: NetworkRoute, configure: (HTTPRequestOperation) -> Void = { _ in }) async throws
            -> (outcome: Outcome, headers: [String: String]) {
            let op = operation(.echo, timeout: 10)
            op.configuration.route = route
            op.retryPolicy = .none
            configure(op)
            let outcome = try await run(op)
            let headers = (try? echoed(outcome))?["headers"] as? [String: String] ?? [:]
            return (outcome, headers)
        }

        static func proxied(_ tinyproxy: Tinyproxy, user: String? = nil, password: String? = nil) throws -> NetworkRoute {
            NetworkRoute(proxy: .proxy(try Proxy(tinyproxy.url, user: user, password: password)))
        }

        @Test func plainHTTPGoesThroughTheProxy() async throws {
            let (outcome, headers) = try await Self.echo(through: Self.proxied(ProxyServers.openHTTP))
            #expect(outcome.error == nil)
            #expect(headers["via"]?.contains("tinyproxy") == true, "\(headers)")
        }

        @Test func httpsGoesThroughAConnectTunnel() async throws {
            let nginx = ExternalServers.nginx
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: nginx.tlsBaseURL + "/hello.txt")!, timeoutInterval: 10))
            op.securityPolicy = try SecurityPolicy(trustedCertificateAuthorities: TLSCertificate.certificates(
                contentsOf: URL(fileURLWithPath: nginx.certificateAuthorityFile)))
            op.configuration.route = try Self.proxied(ProxyServers.openHTTP)
            let outcome = try await run(op)
            #expect(outcome.error == nil)
            // The proxy's "200 Connection established" is not taken for the response.
            #expect(op.responseString == "hello from nginx\n")
            #expect(op.response?.statusCode == 200)
            #expect(ProxyServers.openHTTP.log.contains("CONNECT localhost:\(nginx.tlsPort)"))
        }

        @Test func theProxysCredentialGoesToTheProxyOnly() async throws {
            let route = try Self.proxied(ProxyServers.authenticatingHTTP, user: ProxyServers.user, password: ProxyServers.password)
            let (outcome, headers) = try await Self.echo(through: route)
            #expect(outcome.error == nil)
            #expect(headers["via"]?.contains("tinyproxy") == true)
            #expect(headers["authorization"] == nil && headers["proxy-authorization"] == nil, "\(headers)")
        }

        @Test func withoutItsCredentialTheProxysChallengeIsTheResponse() async throws {
            let (outcome, _) = try await Self.echo(through: Self.proxied(ProxyServers.authenticatingHTTP))
            #expect((outcome.error as? ResponseValidationError)?.statusCode == 407)
        }

        /// The issue's defect: the answer to a 407 was sent as the origin's credential
        /// (`CURLOPT_USERNAME`), so the proxy asked again and the origin received the secret.
        @Test func theAnswerToAProxyChallengeGoesToTheProxy() async throws {
            let challenges = Mutex<[String]>([])
            let (outcome, headers) = try await Self.echo(through: Self.proxied(ProxyServers.authenticatingHTTP)) { op in
                op.setAuthenticationChallengeBlock { _, challenge in
                    challenges.withLock { $0.append("\(challenge.isProxyChallenge) \(challenge.previousFailureCount)") }
                    return URLCredential(user: ProxyServers.user, password: ProxyServers.password, persistence: .none)
                }
            }
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(challenges.withLock { $0 } == ["true 0"])
            #expect(headers["authorization"] == nil, "the origin received \(headers["authorization"] ?? "")")
        }

        @Test func aTunnelRefusedWith407IsAnAuthenticationError() async throws {
            let nginx = ExternalServers.nginx
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: nginx.tlsBaseURL + "/hello.txt")!, timeoutInterval: 10))
            op.configuration.route = try Self.proxied(ProxyServers.authenticatingHTTP)
            op.retryPolicy = .none
            let outcome = try await run(op)
            #expect(outcome.urlErrorCode == .userAuthenticationRequired, "\(String(describing: outcome.error))")
        }

        @Test func socks5CarriesTheRequestWithItsCredential() async throws {
            let socks = ProxyServers.authenticatingSOCKS
            for scheme in ["socks5", "socks5h"] {
                let proxy = try Proxy(URL(string: "\(scheme)://127.0.0.1:\(socks.port)")!,
                                      user: ProxyServers.user, password: ProxyServers.password)
                let (outcome, headers) = try await Self.echo(through: NetworkRoute(proxy: .proxy(proxy)))
                #expect(outcome.error == nil, "\(scheme): \(String(describing: outcome.error))")
                #expect(headers["proxy-authorization"] == nil && headers["authorization"] == nil)
            }
            // Without the credential the proxy refuses, so the request above went through it.
            let anonymous = try Proxy(URL(string: "socks5://127.0.0.1:\(socks.port)")!)
            let (refused, _) = try await Self.echo(through: NetworkRoute(proxy: .proxy(anonymous)))
            #expect(refused.urlErrorCode == .cannotConnectToHost, "\(String(describing: refused.error))")
        }

        @Test func bypassedHostsAreReachedDirectly() async throws {
            var proxy = try Proxy(ProxyServers.openHTTP.url)
            proxy.bypassedHosts = ["127.0.0.1"]
            let (outcome, headers) = try await Self.echo(through: NetworkRoute(proxy: .proxy(proxy)))
            #expect(outcome.error == nil)
            #expect(headers["via"] == nil, "\(headers)")
        }

        /// A proxy the operation names is its proxy for every host but those it bypasses:
        /// `NO_PROXY` in the environment (`169.254.169.254,.svc,localhost` in many containers)
        /// does not take hosts around it. libcurl read it whenever the bypass list was empty,
        /// so requests to those hosts went direct, around an egress or filtering proxy. The
        /// variable is removed before the test ends (the suite runs serialized).
        @Test func theEnvironmentsNoProxyDoesNotBypassANamedProxy() async throws {
            setenv("NO_PROXY", "127.0.0.1,localhost", 1)
            setenv("no_proxy", "127.0.0.1,localhost", 1)
            defer { unsetenv("NO_PROXY"); unsetenv("no_proxy") }
            let (outcome, headers) = try await Self.echo(through: Self.proxied(ProxyServers.openHTTP))
            #expect(outcome.error == nil)
            #expect(headers["via"]?.contains("tinyproxy") == true, "went around the proxy: \(headers)")
        }

        /// `http_proxy` is read by default and ignored by `.direct`. The environment is the
        /// process's: the suite runs serialized (``AllTests``), and the variable is removed
        /// before the test ends.
        @Test func theEnvironmentsProxyIsTheDefaultAndDirectIgnoresIt() async throws {
            setenv("http_proxy", ProxyServers.openHTTP.url.absoluteString, 1)
            defer { unsetenv("http_proxy") }
            let (viaEnvironment, headers) = try await Self.echo(through: .default)
            #expect(viaEnvironment.error == nil)
            #expect(headers["via"]?.contains("tinyproxy") == true, "\(headers)")
            let (direct, directHeaders) = try await Self.echo(through: NetworkRoute(proxy: .direct))
            #expect(direct.error == nil)
            #expect(directHeaders["via"] == nil, "\(directHeaders)")
        }

        @Test func aManagersRouteReachesItsOperations() async throws {
            let manager = HTTPRequestOperationManager(baseURL: testServer.url(.echo))
            manager.defaultConfiguration.route = try Self.proxied(ProxyServers.openHTTP)
            let op = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.echo)), success: nil, failure: nil)
            #expect(op.configuration.route == manager.defaultConfiguration.route)
        }

        @Test func aProxyURLMustBeAProxys() {
            #expect(throws: URLError.self) { try Proxy(URL(string: "ftp://127.0.0.1:21")!) }
            #expect(throws: URLError.self) { try Proxy(URL(string: "http:///nohost")!) }
        }
    }
}
