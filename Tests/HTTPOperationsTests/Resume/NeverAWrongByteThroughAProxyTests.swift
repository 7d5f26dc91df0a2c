import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// The default route reads `https_proxy` from the environment (curl does): a resumed
    /// download through tinyproxy's CONNECT tunnel to nginx, as `httpop` users run it.
    @Suite(.enabled(if: ((ProxyServers.tinyproxyInstalled && ExternalServers.nginxPath != nil) || ExternalServers.required)
                    && builtHTTPOp != nil, "tinyproxy, nginx or httpop missing"))
    struct NeverAWrongByteThroughAProxy {
        /// Before: the proxy's "200 Connection established" was read as the origin's answer
        /// to the range ("Range ignored", the file emptied) and the real 206 written at 0:
        /// "saved", exit 0, the tail only.
        @Test func aResumedDownloadThroughTheEnvironmentsProxyIsByteExact() async throws {
            let nginx = ExternalServers.nginx
            let url = URL(string: nginx.tlsBaseURL + "/5m.bin")!
            // The whole file and its validator, fetched directly.
            let direct = HTTPRequestOperation(request: URLRequest(url: url))
            direct.securityPolicy = try SecurityPolicy(trustedCertificateAuthorities: TLSCertificate.certificates(
                contentsOf: URL(fileURLWithPath: nginx.certificateAuthorityFile)))
            direct.configuration.route = NetworkRoute(proxy: .direct)
            #expect(try await run(direct).error == nil)
            let whole = try #require(direct.responseData)
            let etag = try #require(direct.response?.value(forHTTPHeaderField: "ETag"))
            // A download stopped after 600,000 bytes, as Ctrl-C leaves it.
            let file = temporaryFile()
            defer { removeDownload(file) }
            try whole.prefix(600_000).write(to: file)
            let saved = ResumeData(url: url, validator: .entityTag(etag), offset: 600_000,
                                   expectedLength: Int64(whole.count), destination: file)
            try saved.encoded().write(to: ResumeData.sidecarURL(for: file))

            let process = Process()
            process.executableURL = builtHTTPOp
            process.arguments = ["download", url.absoluteString, "-o", file.path, "--cacert", nginx.certificateAuthorityFile]
            var environment = ProcessInfo.processInfo.environment
            for name in ["no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "HTTPS_PROXY"] { environment[name] = nil }
            environment["https_proxy"] = ProxyServers.openHTTP.url.absoluteString
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let exited = TestSignal("httpop exits")
            process.terminationHandler = { _ in exited.fire() }
            if process.isRunning { try await exited.wait(timeout: .seconds(30)) }
            #expect(process.terminationStatus == 0)
            let body = try Data(contentsOf: file)
            #expect(body.count == whole.count)
            #expect(body == whole)
            #expect(ProxyServers.openHTTP.log.contains("CONNECT localhost:\(nginx.tlsPort)"))
        }
    }
}
