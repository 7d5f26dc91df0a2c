import Foundation
import HTTPOperations
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Servers nobody here wrote — nginx (Debian), httpbin, hyper-h2, sse-starlette and tuspyserver (PyPI) — started by the
/// tests on free loopback ports, to prove HTTPOperations speaks real HTTP.
///
/// `.ci/run` installs both and sets `HTTPOPERATIONS_REQUIRE_INTEROP=1`, so in CI a missing
/// server fails the interop tests instead of skipping them. On a developer machine without
/// them, those tests are skipped.
enum ExternalServers {
    /// Whether interop tests must run (CI), even when a server seems missing.
    static let required = ProcessInfo.processInfo.environment["HTTPOPERATIONS_REQUIRE_INTEROP"] == "1"

    static var nginxPath: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static var httpbinInstalled: Bool {
        run("/usr/bin/env", ["python3", "-c", "import httpbin"]) == 0
    }

    /// nginx with a plain HTTP listener and an HTTP/2 TLS listener; started on first use.
    static let nginx: Nginx = {
        do { return try Nginx.start() } catch { fatalError("nginx did not start: \(error)") }
    }()

    static var h2Installed: Bool {
        run("/usr/bin/env", ["python3", "-c", "import h2"]) == 0
    }

    /// An HTTP/2-only TLS server on hyper-h2 (PyPI: h2) that answers each request with what it
    /// received, its trailers included, as JSON (`Tests/Servers/h2_echo.py`). It serves nginx's
    /// certificate for localhost, so ``Nginx/policyTrustingItsAuthority()`` trusts it; started
    /// on first use.
    static let h2Echo: ManagedProcess = {
        do {
            let port = try freeLoopbackPort()
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../Servers/h2_echo.py").standardized.path
            return try ManagedProcess.start("/usr/bin/env", ["python3", script, "\(port)", nginx.serverCertificateFile,
                                                             nginx.prefix + "/server.key"], port: port)
        } catch {
            fatalError("the h2 echo server did not start: \(error)")
        }
    }()

    static var sseStarletteInstalled: Bool {
        run("/usr/bin/env", ["python3", "-c", "import sse_starlette, uvicorn"]) == 0
    }

    /// A Server-Sent Events feed on sse-starlette under uvicorn (PyPI), ending each connection
    /// after a given number of events (`Tests/Servers/sse_feed.py`); started on first use.
    static let sseFeed: ManagedProcess = {
        do {
            let port = try freeLoopbackPort()
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../Servers/sse_feed.py").standardized.path
            return try ManagedProcess.start("/usr/bin/env", ["python3", script, "\(port)"], port: port)
        } catch {
            fatalError("the sse-starlette feed did not start: \(error)")
        }
    }()

    static var tuspyserverInstalled: Bool {
        run("/usr/bin/env", ["python3", "-c", "import tuspyserver, fastapi, uvicorn"]) == 0
    }

    /// The folder where ``tusServer`` keeps its uploads (`<id>` holds an upload's bytes).
    static let tusFiles = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-tus-\(UUID())").path

    /// A tus 1.0 server: tuspyserver's FastAPI router under uvicorn (PyPI), at `/files/`
    /// (`Tests/Servers/tus_server.py`); started on first use.
    static let tusServer: ManagedProcess = {
        do {
            let port = try freeLoopbackPort()
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../Servers/tus_server.py").standardized.path
            return try ManagedProcess.start("/usr/bin/env", ["python3", script, "\(port)", tusFiles], port: port, removing: tusFiles)
        } catch {
            fatalError("the tus server did not start: \(error)")
        }
    }()

    /// httpbin on Werkzeug's development server; started on first use.
    static let httpbin: ManagedProcess = {
        do {
            let port = try freeLoopbackPort()
            return try ManagedProcess.start("/usr/bin/env", ["python3", "-m", "httpbin.core", "--host", "127.0.0.1", "--port", "\(port)"], port: port)
        } catch {
            fatalError("httpbin did not start: \(error)")
        }
    }()
}

/// A server process the tests own, stopped when the test process exits, however it exits.
///
/// The server runs under `sh`, which waits on a pipe whose write end only this process
/// holds. When this process ends, the kernel closes that end, `cat` sees end-of-file, and
/// the wrapper stops the server: no exit hook to miss, no polling. It uses SIGKILL: a child
/// spawned from a libdispatch thread inherits that thread's blocked signal mask, so SIGTERM
/// would stay pending forever.
final class ManagedProcess: Sendable {
    let port: Int
    private let lifeline: Handover

    /// `Process` and `Pipe` are not Sendable; these are only kept alive, never used again.
    private struct Handover: @unchecked Sendable {
        let process: Process
        let pipe: Pipe
    }

    /// Starts `executable` and waits until it accepts connections on `port` at `host`.
    ///
    /// - Parameter removing: A folder to delete once the server has stopped.
    static func start(_ executable: String, _ arguments: [String], port: Int, host: String = "127.0.0.1",
                      removing folder: String? = nil) throws -> ManagedProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        let script = #""$@" <&- & server=$!; cat >/dev/null; kill -KILL $server; wait $server; [ -n "$HTTPOP_REMOVE" ] && rm -rf "$HTTPOP_REMOVE""#
        process.arguments = ["-c", script, "sh", executable] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["HTTPOP_REMOVE"] = folder ?? ""
        process.environment = environment
        let pipe = Pipe()
        // Only this process may hold the write end: children that inherited it would keep
        // the pipe open after we exit.
        _ = fcntl(pipe.fileHandleForWriting.fileDescriptor, F_SETFD, FD_CLOEXEC)
        process.standardInput = pipe
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilAccepting(port: port, host: host, timeout: 20)
        return ManagedProcess(port: port, lifeline: Handover(process: process, pipe: pipe))
    }

    private init(port: Int, lifeline: Handover) {
        self.port = port
        self.lifeline = lifeline
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }
}

/// nginx with its own prefix, config and throwaway certificate authority.
struct Nginx: Sendable {
    let process: ManagedProcess
    /// The TLS port, which offers HTTP/2 through ALPN.
    let tlsPort: Int
    /// A TLS port that demands a client certificate signed by the test authority
    /// (`client.pem` and `client.key` in ``prefix``); `/client` answers its subject.
    let mutualTLSPort: Int
    /// A TLS port (HTTP/2 too) whose server is an impostor: a certificate for localhost that
    /// the test authority signed, with a key of its own (a mis-issued certificate), followed
    /// by the real server's certificate (``serverCertificateFile``) in the chain it sends.
    let impostorPort: Int
    /// The PEM file of the certificate authority that signed the server's certificate.
    let certificateAuthorityFile: String
    let prefix: String
    /// The PEM file of the server's own certificate (what nginx sends, alone).
    var serverCertificateFile: String { prefix + "/server.pem" }
    /// The Unix domain socket its plain HTTP server also listens on.
    var unixSocketPath: String { prefix + "/nginx.sock" }

    var baseURL: String { process.baseURL }
    var tlsBaseURL: String { "https://localhost:\(tlsPort)" }

    /// A policy that trusts the authority that signed nginx's certificate (and nothing else).
    func policyTrustingItsAuthority() throws -> SecurityPolicy {
        try SecurityPolicy(trustedCertificateAuthorities: TLSCertificate.certificates(contentsOf: URL(fileURLWithPath: certificateAuthorityFile)))
    }

    /// The lines of the access log: `<uri> <status> range="…" if_range="…"`.
    var accessLog: [String] {
        ((try? String(contentsOfFile: prefix + "/logs/access.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// The lines of the access log that start with `prefix`, once there are at least `count`
    /// of them or `timeout` has passed. nginx writes a request's line in its log phase, after
    /// the response has left, so a client that acts on the response can read the log before
    /// the line is there (seen once in CI under load): the file is read again every 10 ms.
    func accessLogLines(startingWith prefix: String, atLeast count: Int = 1,
                        within timeout: Duration = .seconds(5)) async -> [String] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let lines = accessLog.filter { $0.hasPrefix(prefix) }
            if lines.count >= count || ContinuousClock.now >= deadline { return lines }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The bytes nginx serves at `/throttled/5m.bin` (and `/5m.bin`).
    var fiveMegabytes: Data {
        (try? Data(contentsOf: URL(fileURLWithPath: prefix + "/www/5m.bin"))) ?? Data()
    }

    static func start() throws -> Nginx {
        guard let nginx = ExternalServers.nginxPath else { throw ServerError("nginx is not installed") }
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-nginx-\(getpid())").path
        for folder in ["", "/www", "/logs", "/tmp"] {
            try FileManager.default.createDirectory(atPath: prefix + folder, withIntermediateDirectories: true)
        }
        try Data("hello from nginx\n".utf8).write(to: URL(fileURLWithPath: prefix + "/www/hello.txt"))
        var random = SystemRandomNumberGenerator()
        let fiveMegabytes = Data((0..<(5 << 20) / 8).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } })
        try fiveMegabytes.write(to: URL(fileURLWithPath: prefix + "/www/5m.bin"))
        // A certificate authority and a server certificate for localhost, made for this run.
        let ca = prefix + "/ca.pem", caKey = prefix + "/ca.key", key = prefix + "/server.key"
        let csr = prefix + "/server.csr", cert = prefix + "/server.pem", ext = prefix + "/server.ext"
        let clientKey = prefix + "/client.key", clientCSR = prefix + "/client.csr", clientCert = prefix + "/client.pem"
        let impostorKey = prefix + "/impostor.key", impostorCSR = prefix + "/impostor.csr", impostorCert = prefix + "/impostor.pem"
        try Data("subjectAltName=DNS:localhost,IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: ext))
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey, "-out", ca, "-days", "2", "-subj", "/CN=HTTPOperations test CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext],
            // A client certificate from the same authority, for the port that demands one.
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", clientKey, "-out", clientCSR, "-subj", "/CN=httpop client"],
            ["x509", "-req", "-in", clientCSR, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", clientCert, "-days", "2"],
            // The impostor: the same names from the same authority, another key.
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", impostorKey, "-out", impostorCSR, "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", impostorCSR, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", impostorCert, "-days", "2",
             "-extfile", ext],
        ]
        for step in steps where run("/usr/bin/openssl", step) != 0 {
            throw ServerError("openssl \(step.first ?? "") failed")
        }
        // What the impostor sends: its own certificate, then the real server's, appended.
        let impostorChain = prefix + "/impostor-chain.pem"
        try (Data(contentsOf: URL(fileURLWithPath: impostorCert)) + Data(contentsOf: URL(fileURLWithPath: cert)))
            .write(to: URL(fileURLWithPath: impostorChain))
        let port = try freeLoopbackPort(), tlsPort = try freeLoopbackPort(), mutualTLSPort = try freeLoopbackPort()
        let impostorPort = try freeLoopbackPort()
        let config = Self.configuration(prefix: prefix, http: """
            log_format ranges escape=none '$uri $status range="$http_range" if_range="$http_if_range"';
            access_log \(prefix)/logs/access.log ranges;
            keepalive_requests 10000;
            default_type text/plain;
            server {
                listen 127.0.0.1:\(port);
                listen unix:\(prefix)/nginx.sock;
                listen 127.0.0.1:\(tlsPort) ssl http2;
                listen 127.0.0.2:\(tlsPort) ssl http2;
                ssl_certificate \(cert);
                ssl_certificate_key \(key);
                root \(prefix)/www;
                location = /connection { return 200 "$connection"; }
                location = /protocol { return 200 "$server_protocol"; }
                # Trailers go out over HTTP/2 (and over HTTP/1.1 only with a chunked body).
                location = /trailers { add_trailer X-Checksum "sha-abc"; add_trailer X-Count 4; return 200 "body"; }
                location = /cookies/set { add_header Set-Cookie "session=s3cret; Path=/; HttpOnly"; return 200 "set"; }
                location = /cookies/show { return 200 "$http_cookie"; }
                location = /to-plain-http { return 307 http://127.0.0.1:\(port)/hello.txt; }
                location /throttled/ { alias \(prefix)/www/; limit_rate 4m; }
                # nginx's gzip as many sites run it: a compressed 200 carries a weak ETag
                # (W/"x"), a range answer (never compressed) the strong one ("x").
                location /gzipped/ { alias \(prefix)/www/; limit_rate 4m; gzip on; gzip_types *; gzip_min_length 0; }
                # HTTP/2 in front of the fault server (FaultMatrixTests): streamed, not buffered.
                location /fault/ { proxy_pass http://127.0.0.1:\(faultServer.port); proxy_buffering off; proxy_read_timeout 30s; }
                # HTTP/2 in front of the test server's full-duplex routes: the request body goes
                # up as it comes, the response down as it comes (FullDuplexTests).
                location /duplex/ {
                    proxy_pass http://127.0.0.1:\(testServer.port); proxy_http_version 1.1;
                    proxy_request_buffering off; proxy_buffering off; proxy_read_timeout 30s; client_max_body_size 0;
                }
            }
            server {
                listen 127.0.0.1:\(mutualTLSPort) ssl http2;
                ssl_certificate \(cert);
                ssl_certificate_key \(key);
                ssl_client_certificate \(ca);
                ssl_verify_client on;
                root \(prefix)/www;
                location = /client { return 200 "$ssl_client_s_dn"; }
            }
            server {
                listen 127.0.0.1:\(impostorPort) ssl http2;
                ssl_certificate \(impostorChain);
                ssl_certificate_key \(impostorKey);
                root \(prefix)/www;
            }
        """)
        try Data(config.utf8).write(to: URL(fileURLWithPath: prefix + "/nginx.conf"))
        let process = try ManagedProcess.start(nginx, ["-c", prefix + "/nginx.conf", "-p", prefix], port: port, removing: prefix)
        try waitUntilAccepting(port: tlsPort, timeout: 20)
        try waitUntilAccepting(port: mutualTLSPort, timeout: 20)
        try waitUntilAccepting(port: impostorPort, timeout: 20)
        return Nginx(process: process, tlsPort: tlsPort, mutualTLSPort: mutualTLSPort, impostorPort: impostorPort,
                     certificateAuthorityFile: ca, prefix: prefix)
    }
}

extension Nginx {
    /// An nginx configuration for a server run in the foreground from `prefix` (which holds
    /// `logs/`, `tmp/` and the pid file): one worker, and `http` as the `http` block's body.
    static func configuration(prefix: String, connections: Int = 256, http: String) -> String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(prefix)/nginx.pid;
        error_log \(prefix)/logs/error.log warn;
        events { worker_connections \(connections); }
        http {
            client_body_temp_path \(prefix)/tmp; proxy_temp_path \(prefix)/tmp; fastcgi_temp_path \(prefix)/tmp;
            uwsgi_temp_path \(prefix)/tmp; scgi_temp_path \(prefix)/tmp;
        \(http)
        }

        """
    }
}

struct ServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs a command to completion and returns its exit status; output is discarded.
@discardableResult
func run(_ executable: String, _ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return -1 }
    process.waitUntilExit()
    return process.terminationStatus
}

/// A loopback port that nothing listens on right now (bound, then released).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    try withUnsafeMutablePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            guard bind(fd, raw, length) == 0, getsockname(fd, raw, &length) == 0 else {
                throw ServerError("no free loopback port")
            }
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Waits until something accepts TCP connections on `port`: a readiness probe for a server
/// process that just started, trying every 20 ms until `timeout` seconds have passed.
func waitUntilAccepting(port: Int, host: String = "127.0.0.1", timeout: TimeInterval) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        close(fd)
        if connected { return }
        usleep(20_000)
    }
    throw ServerError("nothing accepted connections on port \(port) within \(timeout) s")
}
