import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Real proxies from Debian, started by the tests on free loopback ports: tinyproxy (an HTTP
/// proxy that also tunnels with CONNECT) and microsocks (a SOCKS5 proxy). `.ci/run` installs
/// both; like nginx, a missing one skips its tests on a developer machine and fails them in
/// CI (``ExternalServers/required``).
enum ProxyServers {
    static var tinyproxyInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/tinyproxy") }
    static var microsocksInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/microsocks") }

    /// The user and password of the proxies that ask for them.
    static let user = "proxy-user", password = "proxy-s3cret"

    /// tinyproxy asking for no credential.
    static let openHTTP: Tinyproxy = {
        do { return try Tinyproxy.start(requiringCredential: false) } catch { fatalError("tinyproxy did not start: \(error)") }
    }()

    /// tinyproxy that answers 407 without ``user`` and ``password`` (Basic).
    static let authenticatingHTTP: Tinyproxy = {
        do { return try Tinyproxy.start(requiringCredential: true) } catch { fatalError("tinyproxy did not start: \(error)") }
    }()

    /// microsocks requiring ``user`` and ``password`` (RFC 1929): a request that gets through
    /// without them did not go through the proxy.
    static let authenticatingSOCKS: ManagedProcess = {
        do {
            let port = try freeLoopbackPort()
            return try ManagedProcess.start("/usr/bin/microsocks", ["-i", "127.0.0.1", "-p", "\(port)", "-u", user, "-P", password],
                                            port: port)
        } catch {
            fatalError("microsocks did not start: \(error)")
        }
    }()
}

/// One tinyproxy with its own folder, configuration and log.
struct Tinyproxy: Sendable {
    let process: ManagedProcess
    let logFile: String

    var url: URL { URL(string: "http://127.0.0.1:\(process.port)")! }

    /// The lines of its log (connections, requests, CONNECT targets).
    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    static func start(requiringCredential: Bool) throws -> Tinyproxy {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-tinyproxy-\(getpid())-\(requiringCredential)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // tinyproxy refuses to keep root and becomes `nobody`, who must be able to write the log.
        chmod(folder, 0o777)
        let port = try freeLoopbackPort()
        let logFile = folder + "/tinyproxy.log"
        var config = """
        Port \(port)
        Listen 127.0.0.1
        Timeout 30
        MaxClients 100
        Allow 127.0.0.1
        LogLevel Connect
        LogFile "\(logFile)"
        DisableViaHeader No

        """
        if getuid() == 0 { config += "User nobody\nGroup nogroup\n" }
        if requiringCredential { config += "BasicAuth \(ProxyServers.user) \(ProxyServers.password)\n" }
        try Data(config.utf8).write(to: URL(fileURLWithPath: folder + "/tinyproxy.conf"))
        let process = try ManagedProcess.start("/usr/bin/tinyproxy", ["-d", "-c", folder + "/tinyproxy.conf"], port: port, removing: folder)
        return Tinyproxy(process: process, logFile: logFile)
    }
}
