import Foundation
import HTTPTestServer
import HTTPTestTLSServer

/// nginx in front of the campaign's adversarial server, speaking HTTP/2 over TLS to the client
/// and HTTP/1.1 to the server (issue 38: "HTTP/2" among the campaign's adversities), as many
/// sites are deployed. Streamed both ways (`proxy_buffering off`), and the server's `Date`
/// passed on (else nginx writes its own, which would make a `Last-Modified` in the second of
/// the server's `Date` look strong). The certificate is the campaign's own (``TestCertificates``'
/// leaf and intermediate), so the campaign's security policy trusts it.
///
/// What nginx makes of the server's faults is what a client meets in the field: a drop before
/// the head becomes a `502`, a drop in the body a reset stream, a chunked body an HTTP/2 body
/// of unannounced length.
final class CampaignHTTP2Front: Sendable {
    let port: Int
    private let process: ManagedProcess

    /// Started in the test's process the first time an HTTP/2 scenario runs; nil when nginx is
    /// not installed (CI installs it and requires it: `HTTPOPERATIONS_REQUIRE_INTEROP`).
    static let shared: CampaignHTTP2Front? = {
        do {
            return try CampaignHTTP2Front(backendPort: CampaignServers.shared.server.port)
        } catch {
            if ExternalServers.required { fatalError("the campaign's HTTP/2 front (nginx) did not start: \(error)") }
            print("resume campaign: no HTTP/2 front (\(error)); its scenarios go over https (HTTP/1.1)")
            return nil
        }
    }()

    private init(backendPort: Int) throws {
        guard let nginx = ExternalServers.nginxPath else { throw ServerError("nginx is not installed") }
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-campaign-h2-\(getpid())").path
        for folder in ["", "/logs", "/tmp"] {
            try FileManager.default.createDirectory(atPath: prefix + folder, withIntermediateDirectories: true)
        }
        let certificates = TestCertificates.shared
        try Data((certificates.leaf.certificatePEM + "\n" + certificates.intermediate.certificatePEM).utf8)
            .write(to: URL(fileURLWithPath: prefix + "/chain.pem"))
        try Data(certificates.leaf.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: prefix + "/key.pem"))
        let port = try freeLoopbackPort()
        let config = Nginx.configuration(prefix: prefix, connections: 1024, http: """
            access_log off;
            keepalive_requests 10000;
            http2_max_concurrent_streams 256;
            # Kept-alive connections to the server, as a site's nginx keeps them: the server's
            # faults on a reused connection (closed unanswered) reach nginx, which sends a GET
            # again on a fresh one and a POST never (non_idempotent is not set).
            upstream campaign { server 127.0.0.1:\(backendPort); keepalive 32; }
            server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(prefix)/chain.pem;
                ssl_certificate_key \(prefix)/key.pem;
                location / {
                    proxy_pass http://campaign; proxy_http_version 1.1; proxy_set_header Connection "";
                    proxy_buffering off; proxy_request_buffering off; client_max_body_size 0;
                    proxy_read_timeout 30s; proxy_pass_header Date; proxy_pass_header Server;
                }
            }
        """)
        try Data(config.utf8).write(to: URL(fileURLWithPath: prefix + "/nginx.conf"))
        process = try ManagedProcess.start(nginx, ["-c", prefix + "/nginx.conf", "-p", prefix], port: port, removing: prefix)
        self.port = port
    }
}
