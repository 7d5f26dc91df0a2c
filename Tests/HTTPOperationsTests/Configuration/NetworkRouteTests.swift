import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// Unix domain sockets (nginx listening on one), host overrides and the process-wide
    /// connection limits.
    @Suite struct NetworkRoutes {
        static func get(_ url: URL, route: NetworkRoute, policy: SecurityPolicy? = nil) async throws -> HTTPRequestOperation {
            let op = HTTPRequestOperation(request: URLRequest(url: url, timeoutInterval: 10))
            op.configuration.route = route
            op.retryPolicy = .none
            if let policy { op.securityPolicy = policy }
            _ = try await run(op)
            return op
        }

        static var nginxPolicy: SecurityPolicy {
            get throws {
                try SecurityPolicy(trustedCertificateAuthorities: TLSCertificate.certificates(
                    contentsOf: URL(fileURLWithPath: ExternalServers.nginx.certificateAuthorityFile)))
            }
        }

        @Test(.enabled(if: ExternalServers.nginxPath != nil || ExternalServers.required, "nginx is not installed"))
        func aUnixSocketReachesTheDaemonListeningOnIt() async throws {
            let route = NetworkRoute(unixSocketPath: ExternalServers.nginx.unixSocketPath)
            // No TCP listener has this name and port: only the socket can answer.
            let op = try await Self.get(URL(string: "http://daemon.invalid:1/hello.txt")!, route: route)
            #expect(op.error == nil, "\(String(describing: op.error))")
            #expect(op.responseString == "hello from nginx\n")
        }

        @Test func aMissingUnixSocketCannotConnect() async throws {
            let route = NetworkRoute(unixSocketPath: "/nonexistent/httpop.sock")
            let op = try await Self.get(testServer.url(.echo), route: route)
            #expect((op.error as? URLError)?.code == .cannotConnectToHost, "\(String(describing: op.error))")
        }

        @Test func aHostOverrideConnectsElsewhereAndKeepsTheName() async throws {
            let port = testServer.port
            let url = testServer.url(.echo, host: "service.invalid")
            let route = NetworkRoute(hostOverrides: [HostOverride(host: "service.invalid", port: port, address: "127.0.0.1")])
            let op = try await Self.get(url, route: route)
            #expect(op.error == nil, "\(String(describing: op.error))")
            let headers = try #require(try JSONSerialization.jsonObject(with: op.responseData ?? Data()) as? [String: Any])["headers"] as? [String: String]
            #expect(headers?["host"] == "service.invalid:\(port)")
            // The override stays with its route: it did not enter a DNS cache others read.
            let without = try await Self.get(url, route: .default)
            #expect((without.error as? URLError)?.code == .cannotFindHost, "\(String(describing: without.error))")
        }

        @Test(.enabled(if: ExternalServers.nginxPath != nil || ExternalServers.required, "nginx is not installed"))
        func tlsChecksTheNameInTheURLNotTheOverride() async throws {
            let nginx = ExternalServers.nginx
            // The certificate names localhost: reached through port 1 overridden to nginx's, it passes…
            let moved = NetworkRoute(hostOverrides: [HostOverride(host: "localhost", port: 1, address: "127.0.0.1", addressPort: nginx.tlsPort)])
            let good = try await Self.get(URL(string: "https://localhost:1/hello.txt")!, route: moved, policy: Self.nginxPolicy)
            #expect(good.error == nil, "\(String(describing: good.error))")
            #expect(good.responseString == "hello from nginx\n")
            // …and another name sent to the same server fails the check, as it must.
            let renamed = NetworkRoute(hostOverrides: [HostOverride(host: "api.example.test", address: "127.0.0.1")])
            let bad = try await Self.get(URL(string: "https://api.example.test:\(nginx.tlsPort)/hello.txt")!, route: renamed,
                                         policy: Self.nginxPolicy)
            #expect((bad.error as? URLError)?.code == .serverCertificateUntrusted, "\(String(describing: bad.error))")
        }

        @Test func overridesParseCurlsResolveForm() throws {
            #expect(try HostOverride(resolving: "example.com:443:10.0.0.7") == HostOverride(host: "example.com", port: 443, address: "10.0.0.7"))
            #expect(try HostOverride(resolving: "example.com:443:[::1]").connectToEntry == "example.com:443:[::1]:")
            #expect(try HostOverride(resolving: "example.com:80:::1").address == "::1")
            for bad in ["example.com", "example.com:443", ":443:10.0.0.7", "example.com:http:10.0.0.7", "example.com:0:1.2.3.4", "example.com:443:"] {
                #expect(throws: URLError.self, "\(bad)") { try HostOverride(resolving: bad) }
            }
        }

        /// Six requests started together to one host, with at most two connections per host:
        /// two connections carry all six (``ConnectionSharing/plainHTTPGetsAConnectionPerRequest()``
        /// is the control, six without a limit).
        @Test func aPerHostLimitCapsTheConnections() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            ConnectionLimits.current = ConnectionLimits(perHost: 2)
            defer { ConnectionLimits.current = .unlimited }
            let operations = try await ConnectionSharing.startTogether((0..<6).map { _ in server.url(.delay(milliseconds: 300)) })
            #expect(operations.allSatisfy { $0.error == nil })
            #expect(server.acceptedConnections == 2)
        }

        /// A total limit caps curl's connection cache too, and lifting it restores the cache.
        /// (What curl then does with the limit depends on how many idle connections the
        /// process holds: in isolation six 200 ms requests to two hosts at `total: 1` ran one
        /// at a time, 1.11–1.33 s against 0.32 s; after the rest of the suite, with its idle
        /// connections to close, 0.30 s. Docs/Networking.md has the measurements.)
        @Test func aTotalLimitCapsTheConnectionCache() async throws {
            func cacheSize() async throws -> Int {
                let size = Mutex(0)
                let read = TestSignal("the cache size read on the network thread")
                NetworkThread.shared.perform {
                    size.withLock { $0 = NetworkThread.shared.multi.connectionCacheSizeForTesting }
                    read.fire()
                }
                try await read.wait(timeout: .seconds(5))
                return size.withLock { $0 }
            }
            ConnectionLimits.current = ConnectionLimits(total: 3)
            defer { ConnectionLimits.current = .unlimited }
            #expect(try await cacheSize() == 3)
            ConnectionLimits.current = .unlimited
            #expect(try await cacheSize() >= 16)
        }
    }
}
