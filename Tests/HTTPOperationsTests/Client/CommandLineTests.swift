import Foundation
import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `httpop` built beside this test bundle (`swift build --build-tests` builds both).
let builtHTTPOp: URL? = {
    let candidate = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("httpop")
    return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
}()

extension AllTests {
    /// `httpop`, the built executable, run as a user would.
    @Suite(.enabled(if: builtHTTPOp != nil || ExternalServers.required, "httpop is not built next to the tests"))
    struct CommandLineTests {

        /// A running `httpop` whose stderr is read line by line.
        final class Run: @unchecked Sendable {
            // @unchecked: the Process and Pipe are touched by the test only, one call at a time.
            let process = Process()
            private let stderr = Pipe()
            private var buffer = Data()

            /// Starts `httpop` with `arguments`; its stdout goes to `standardOutput` (a file, so a
            /// large body cannot block it), or nowhere.
            init(_ arguments: [String], standardOutput: FileHandle? = nil) throws {
                process.executableURL = builtHTTPOp
                process.arguments = arguments
                process.standardError = stderr
                process.standardOutput = standardOutput ?? FileHandle.nullDevice
                try process.run()
            }

            /// Reads stderr until a line containing `text` (or end of output); returns all read.
            func readUntil(_ text: String) -> String {
                while !String(decoding: buffer, as: UTF8.self).contains(text) {
                    let chunk = stderr.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                }
                return String(decoding: buffer, as: UTF8.self)
            }

            /// Waits for exit, reading the rest of stderr; returns the status and all of stderr.
            func finish() -> (status: Int32, stderr: String) {
                buffer.append(stderr.fileHandleForReading.readDataToEndOfFile())
                process.waitUntilExit()
                return (process.terminationStatus, String(decoding: buffer, as: UTF8.self))
            }
        }

        /// Runs blocking reads off the cooperative pool.
        private func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
            try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
            }
        }

        @Test(arguments: [SIGINT, SIGTERM])
        func aSignalShutsDownSavesResumeDataAndTheSameCommandContinues(signal: Int32) async throws {
            let size = 3_000_000
            var options = ResumableOptions()
            options.chunkSize = 32 << 10
            options.chunkDelayMilliseconds = 5
            let url = testServer.url(.resumable(size: size, options: options)).absoluteString
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-cli-\(UUID()).bin")
            let sidecar = ResumeData.sidecarURL(for: file)
            defer {
                try? FileManager.default.removeItem(at: file)
                try? FileManager.default.removeItem(at: sidecar)
            }
            let checksum = sha256(ResumableOptions.content(version: 0, count: size))
            let arguments = ["download", url, "-o", file.path, "--sha256", checksum]

            let first = try Run(arguments)
            // Interrupt once progress is reported: the download is under way.
            _ = try await offPool { first.readUntil("%") }
            kill(first.process.processIdentifier, signal)
            let interrupted = try await offPool { first.finish() }
            #expect(interrupted.status == 130, "\(interrupted.stderr)")
            #expect(interrupted.stderr.contains("paused at byte"))
            #expect(interrupted.stderr.contains("network thread stopped"), "\(interrupted.stderr)")
            let saved = try ResumeData(from: try Data(contentsOf: sidecar))
            #expect(saved.offset > 0 && saved.offset < Int64(size))

            let second = try Run(arguments)
            let resumed = try await offPool { second.finish() }
            #expect(resumed.status == 0, "\(resumed.stderr)")
            #expect(resumed.stderr.contains("resuming \(file.lastPathComponent) from byte"))
            #expect(sha256(try Data(contentsOf: file)) == checksum)
            #expect(!FileManager.default.fileExists(atPath: sidecar.path), "resume data removed once complete")
        }

        @Test(arguments: ResumableUploadProtocol.allCases)
        func uploadStopsOnASignalKeepsItsStateAndTheSameCommandFinishes(uploadProtocol: ResumableUploadProtocol) async throws {
            // Every request answers after 40 ms: the upload is under way long enough to be stopped.
            let stalls = Dictionary(uniqueKeysWithValues: (0..<200).map { ($0, UploadStore.Fault.stall(milliseconds: 40)) })
            let run = try UploadRun(size: 600_000, seed: 7, protocol: uploadProtocol, faults: stalls)
            let state = run.file.path + ".httpop-upload"
            defer { try? FileManager.default.removeItem(atPath: state) }
            let arguments = ["upload", run.file.path, run.creationURL.absoluteString, "--chunk-size", "16384",
                             "--protocol", uploadProtocol == .tus ? "tus" : "ietf-draft"]
            let first = try Run(arguments)
            // Past the creation (whose bytes are reported too): the upload exists on the server.
            _ = try await offPool { first.readUntil("10%") }
            kill(first.process.processIdentifier, SIGINT)
            let stopped = try await offPool { first.finish() }
            #expect(stopped.status == 130, "\(stopped.stderr)")
            #expect(stopped.stderr.contains("resume data saved to"), "\(stopped.stderr)")
            let saved = try UploadResumeData(encoded: Data(contentsOf: URL(fileURLWithPath: state)))
            #expect(saved.acknowledgedOffset < 600_000)

            let output = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-upload-\(UUID()).out")
            try #require(FileManager.default.createFile(atPath: output.path, contents: nil))
            defer { try? FileManager.default.removeItem(at: output) }
            let second = try Run(arguments, standardOutput: try FileHandle(forWritingTo: output))
            let finished = try await offPool { second.finish() }
            #expect(finished.status == 0, "\(finished.stderr)")
            #expect(finished.stderr.contains("resuming \(saved.uploadURL.absoluteString)"))
            let printed = try String(contentsOf: output, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(printed == saved.uploadURL.absoluteString)
            #expect(run.uploads.count == 1)
            #expect(run.uploads.first?.bytes == run.content)
            #expect(!FileManager.default.fileExists(atPath: state), "the state file is removed once complete")
        }

        @Test func continueWithoutResumeDataUsesTheFileSize() async throws {
            let size = 1_000_000
            let url = testServer.url(.resumable(size: size, options: ResumableOptions())).absoluteString
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-cli-\(UUID()).bin")
            defer { try? FileManager.default.removeItem(at: file) }
            try ResumableOptions.content(version: 0, count: 400_000).write(to: file)
            let run = try Run(["download", url, "-o", file.path, "-C"])
            let result = try await offPool { run.finish() }
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains("continuing \(file.lastPathComponent) from byte 400000"))
            #expect(sha256(try Data(contentsOf: file)) == sha256(ResumableOptions.content(version: 0, count: size)))
        }

        @Test func pinsCAsAndInsecureWorkFromTheCommandLine() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let certificates = TestCertificates.shared
            let folder = try TemporaryFolder()
            let root = try folder.write("root.pem", certificates.root.certificatePEM)
            let intermediate = try folder.write("intermediate.pem", certificates.intermediate.certificatePEM)
            let url = server.http.url(.bytes(10)).absoluteString
            func httpop(_ arguments: [String]) async throws -> (status: Int32, stderr: String) {
                let run = try Run(arguments)
                return try await offPool { run.finish() }
            }

            let untrusted = try await httpop(["get", url])
            #expect(untrusted.status == 1 && untrusted.stderr.contains("certificate"), "\(untrusted.stderr)")
            #expect(try await httpop(["get", url, "--cacert", root.path]).status == 0)
            #expect(try await httpop(["get", url, "--cacert", root.path, "--pinned-key", certificates.leaf.publicKeyPin]).status == 0)
            #expect(try await httpop(["get", url, "--pinned-cert", intermediate.path]).status == 0)
            #expect(try await httpop(["get", url, "-k"]).status == 0)

            let wrongPin = certificates.impostorLeaf.publicKeyPin
            let mismatch = try await httpop(["get", url, "--cacert", root.path, "--pinned-key", wrongPin])
            #expect(mismatch.status == 1)
            let lines = mismatch.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one line: \(mismatch.stderr)")
            #expect(mismatch.stderr.contains("127.0.0.1") && mismatch.stderr.contains(wrongPin)
                    && mismatch.stderr.contains(certificates.leaf.publicKeyPin), "\(mismatch.stderr)")
            let badPin = try await httpop(["get", url, "--pinned-key", "sha256//nope"])
            #expect(badPin.status != 0 && badPin.stderr.contains("sha256//"), "\(badPin.stderr)")
            // Only the four accepted requests reached the server.
            #expect(server.http.receivedRequests.count == 4)
        }

        /// `--unix-socket`, `--resolve`, `--proxy` and `--proxy-user`: each request below can
        /// only succeed by the route its options give (no TCP server has the name, or the
        /// proxy refuses requests without its credential).
        @Test(.enabled(if: (ExternalServers.nginxPath != nil && ProxyServers.tinyproxyInstalled) || ExternalServers.required,
                       "nginx or tinyproxy is not installed"))
        func routesFromTheCommandLine() async throws {
            func httpop(_ arguments: [String]) async throws -> (status: Int32, stderr: String) {
                let run = try Run(arguments)
                return try await offPool { run.finish() }
            }
            let socket = try await httpop(["get", "--unix-socket", ExternalServers.nginx.unixSocketPath, "http://daemon.invalid:1/hello.txt"])
            #expect(socket.status == 0, "\(socket.stderr)")

            let named = testServer.url(.bytes(10), host: "service.invalid").absoluteString
            #expect(try await httpop(["get", named]).status == 1)
            let resolved = try await httpop(["get", "--resolve", "service.invalid:\(testServer.port):127.0.0.1", named])
            #expect(resolved.status == 0, "\(resolved.stderr)")
            let malformed = try await httpop(["get", "--resolve", "service.invalid:127.0.0.1", named])
            #expect(malformed.status != 0 && malformed.stderr.contains("HOST:PORT:ADDRESS"), "\(malformed.stderr)")

            let proxy = ProxyServers.authenticatingHTTP.url.absoluteString
            let url = testServer.url(.bytes(10)).absoluteString
            let refused = try await httpop(["get", "--proxy", proxy, url])
            #expect(refused.status == 1 && refused.stderr.contains("407"), "\(refused.stderr)")
            let proxied = try await httpop(["get", "--proxy", proxy, "--proxy-user", "\(ProxyServers.user):\(ProxyServers.password)", url])
            #expect(proxied.status == 0, "\(proxied.stderr)")
            #expect(try await httpop(["get", "--proxy", "", url]).status == 0)
            let badProxy = try await httpop(["get", "--proxy", "ftp://127.0.0.1:21", url])
            #expect(badProxy.status != 0 && badProxy.stderr.contains("proxy"), "\(badProxy.stderr)")
        }

        /// `--cookie-jar`: the first run keeps what the server set in the file, the second sends
        /// it back (nginx's `/cookies/show` answers the `Cookie` header it received).
        @Test(.enabled(if: ExternalServers.nginxPath != nil || ExternalServers.required, "nginx is not installed"))
        func aCookieJarFromTheCommandLine() async throws {
            let folder = try TemporaryFolder()
            let jar = folder.url.appendingPathComponent("cookies.txt").path
            let body = folder.url.appendingPathComponent("body.txt")
            #expect(FileManager.default.createFile(atPath: body.path, contents: nil))
            let base = ExternalServers.nginx.baseURL
            let set = try Run(["get", "--cookie-jar", jar, base + "/cookies/set"])
            let setResult = try await offPool { set.finish() }
            #expect(setResult.status == 0, "\(setResult.stderr)")
            #expect(try String(contentsOfFile: jar, encoding: .utf8).contains("session\ts3cret"))
            let output = try FileHandle(forWritingTo: body)
            let show = try Run(["get", "-c", jar, base + "/cookies/show"], standardOutput: output)
            let showResult = try await offPool { show.finish() }
            try output.close()
            #expect(showResult.status == 0, "\(showResult.stderr)")
            #expect(try String(contentsOf: body, encoding: .utf8) == "session=s3cret")
        }

        @Test func aClientCertificateFromTheCommandLine() async throws {
            let server = try TLSTestServer.start(.requiresClientCertificate)
            defer { server.shutdown() }
            let certificates = TestCertificates.shared
            let folder = try TemporaryFolder()
            let root = try folder.write("root.pem", certificates.root.certificatePEM)
            let cert = try folder.write("client.pem", certificates.client.certificatePEM)
            let key = try folder.write("client.key", certificates.client.privateKeyPEM)
            let run = try Run(["get", server.http.url(.bytes(10)).absoluteString, "--cacert", root.path,
                               "--cert", cert.path, "--key", key.path])
            let result = try await offPool { run.finish() }
            #expect(result.status == 0, "\(result.stderr)")
            let missingKey = try Run(["get", server.http.url(.bytes(10)).absoluteString, "--cert", cert.path])
            #expect(try await offPool { missingKey.finish() }.status != 0)
        }

        @Test func eventsPrintsTheStreamAndResumesFromItsStateFile() async throws {
            let run = EventStreamRun {
                $0.count = 7
                $0.connections = [.cut(bytes: 90)]
            }
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-events-\(UUID()).state")
            let output = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-events-\(UUID()).out")
            defer {
                try? FileManager.default.removeItem(at: state)
                try? FileManager.default.removeItem(at: output)
            }
            for (arguments, expectedIDs) in [(["--max-events", "3"], 1...3), ([], 4...7)] {
                _ = FileManager.default.createFile(atPath: output.path, contents: nil)
                let handle = try FileHandle(forWritingTo: output)
                let command = try Run(["events", run.url.absoluteString, "--state", state.path] + arguments, standardOutput: handle)
                let result = try await offPool { command.finish() }
                try handle.close()
                #expect(result.status == 0, "\(result.stderr)")
                let lines = try String(contentsOf: output, encoding: .utf8).split(separator: "\n").map(String.init)
                #expect(lines == expectedIDs.map { "message [\($0)]: \(run.feed.data(of: $0))" })
                #expect(try String(contentsOf: state, encoding: .utf8) == "\(expectedIDs.upperBound)")
            }
            // The second run began where the first stopped, and ended at the server's 204.
            #expect(run.lastEventIDsSent.last == "7")
            #expect(run.lastEventIDsSent.contains("3"))
        }

        @Test func aWrongChecksumFails() async throws {
            let url = testServer.url(.resumable(size: 10_000, options: ResumableOptions())).absoluteString
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-cli-\(UUID()).bin")
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try Run(["download", url, "-o", file.path, "--sha256", String(repeating: "ab", count: 32)])
            let result = try await offPool { run.finish() }
            #expect(result.status == 1)
            #expect(result.stderr.contains("SHA-256"))
        }
    }
}

extension AllTests.CommandLineTests {
    /// The library asks for TLS 1.2 at least, whatever OpenSSL's configuration allows: with a
    /// configuration that lets OpenSSL speak TLS 1.1 (security level 0, `MinProtocol = TLSv1`),
    /// a server that speaks only 1.1 is refused, with or without `-k`. Run in a process of its
    /// own, since OpenSSL reads its configuration once per process.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl is not installed"))
    func aServerThatSpeaksOnlyTLS11IsRefused() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-tls11-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func openssl(_ arguments: [String], configuration: URL? = nil,
                     standardError: FileHandle = .nullDevice) throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            if let configuration { process.environment = ["OPENSSL_CONF": configuration.path] }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = standardError
            try process.run()
            return process
        }
        let key = folder.appendingPathComponent("key.pem").path, certificate = folder.appendingPathComponent("cert.pem").path
        let made = try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                                "-days", "1", "-subj", "/CN=127.0.0.1"])
        made.waitUntilExit()
        try #require(made.terminationStatus == 0)
        let configuration = folder.appendingPathComponent("openssl.cnf")
        try """
        openssl_conf = init
        [init]
        ssl_conf = ssl
        [ssl]
        system_default = permissive
        [permissive]
        MinProtocol = TLSv1
        CipherString = DEFAULT:@SECLEVEL=0
        """.write(to: configuration, atomically: true, encoding: .utf8)
        // s_server cannot be handed port 0. CI once saw it never answer on a port drawn at random
        // (a port in use makes it exit at once): the port is one the kernel just called free, as
        // for the other external servers, and a server that exits anyway is started again on
        // another, its own words kept. It reads the permissive configuration too, whatever the
        // machine's own says.
        var port = 0, server: Process?, serverSaid = "", spoke = false
        defer { server?.terminate() }
        for _ in 0..<5 where !spoke {
            port = try freeLoopbackPort()
            let serverLog = folder.appendingPathComponent("s_server-\(port).log")
            try #require(FileManager.default.createFile(atPath: serverLog.path, contents: nil))
            let started = try openssl(["s_server", "-accept", "127.0.0.1:\(port)", "-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0",
                                       "-key", key, "-cert", certificate, "-www"],
                                      configuration: configuration, standardError: try FileHandle(forWritingTo: serverLog))
            server = started
            // The control: OpenSSL itself, under that configuration, speaks TLS 1.1 with the
            // server (so the refusal below is the library's, not a server that is not up yet).
            for _ in 0..<50 where !spoke && started.isRunning {
                let probe = Process()
                probe.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
                probe.arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"]
                probe.environment = ["OPENSSL_CONF": configuration.path]
                probe.standardInput = FileHandle.nullDevice
                probe.standardOutput = FileHandle.nullDevice
                probe.standardError = FileHandle.nullDevice
                try probe.run()
                probe.waitUntilExit()
                spoke = probe.terminationStatus == 0
                if !spoke { try await Task.sleep(for: .milliseconds(100)) }
            }
            if !spoke {
                started.terminate()
                started.waitUntilExit()
                serverSaid = (try? String(contentsOf: serverLog, encoding: .utf8)) ?? ""
            }
        }
        try #require(spoke, "openssl s_server did not speak TLS 1.1 (last port \(port)); it said: \(serverSaid)")

        let client = Process()
        client.executableURL = builtHTTPOp
        client.arguments = ["get", "-k", "https://127.0.0.1:\(port)/"]
        client.environment = ["OPENSSL_CONF": configuration.path]
        let stderr = Pipe()
        client.standardError = stderr
        client.standardOutput = FileHandle.nullDevice
        try client.run()
        let said = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        client.waitUntilExit()
        #expect(client.terminationStatus == 1, "TLS 1.1 was accepted: \(said)")
    }
}
