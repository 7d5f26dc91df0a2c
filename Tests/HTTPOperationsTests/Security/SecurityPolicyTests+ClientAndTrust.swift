import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
import Testing

/// Client certificates, the TLS version and the server-trust block.
extension AllTests.SecurityPolicyTests {
    // MARK: - Client certificates and TLS version

    @Test func aServerThatAsksForAClientCertificateGetsIt() async throws {
        let server = try TLSTestServer.start(.requiresClientCertificate)
        defer { server.shutdown() }
        let folder = try TemporaryFolder()
        let certificateFile = try folder.write("client.pem", Self.certificates.client.certificatePEM)
        let keyFile = try folder.write("client.key", Self.certificates.client.privateKeyPEM)
        let authorities = [try Self.certificate(Self.certificates.root)]

        let none = try await Self.get(server, SecurityPolicy(trustedCertificateAuthorities: authorities))
        #expect(none.error != nil)
        let fromFiles = try ClientIdentity(certificateFile: certificateFile, privateKeyFile: keyFile)
        let withFiles = try await Self.get(server, SecurityPolicy(trustedCertificateAuthorities: authorities, clientIdentity: fromFiles))
        #expect(withFiles.error == nil, "\(String(describing: withFiles.error))")
        let inMemory = try ClientIdentity(certificate: .pem(Data(Self.certificates.client.certificatePEM.utf8)),
                                          privateKey: .pem(Data(Self.certificates.client.privateKeyPEM.utf8)))
        let withBlobs = try await Self.get(server, SecurityPolicy(trustedCertificateAuthorities: authorities, clientIdentity: inMemory))
        #expect(withBlobs.error == nil, "\(String(describing: withBlobs.error))")
        let stranger = try ClientIdentity(certificate: .pem(Data(Self.certificates.untrustedClient.certificatePEM.utf8)),
                                          privateKey: .pem(Data(Self.certificates.untrustedClient.privateKeyPEM.utf8)))
        let refused = try await Self.get(server, SecurityPolicy(trustedCertificateAuthorities: authorities, clientIdentity: stranger))
        #expect(refused.error != nil)
        // Only the two requests with the right certificate got through.
        #expect(server.http.receivedRequests.count == 2)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl is not installed"))
    func anEncryptedClientKeyIsOpenedWithItsPassphrase() async throws {
        let server = try TLSTestServer.start(.requiresClientCertificate)
        defer { server.shutdown() }
        let folder = try TemporaryFolder()
        let certificateFile = try folder.write("client.pem", Self.certificates.client.certificatePEM)
        let plainKey = try folder.write("plain.key", Self.certificates.client.privateKeyPEM)
        let encryptedKey = folder.url.appendingPathComponent("encrypted.key")
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", plainKey.path, "-out", encryptedKey.path,
                             "-passout", "pass:correct horse"]
        try openssl.run()
        openssl.waitUntilExit()
        try #require(openssl.terminationStatus == 0)
        #expect(try String(contentsOf: encryptedKey, encoding: .utf8).contains("ENCRYPTED PRIVATE KEY"))
        let authorities = [try Self.certificate(Self.certificates.root)]
        let right = try ClientIdentity(certificateFile: certificateFile, privateKeyFile: encryptedKey, passphrase: "correct horse")
        let accepted = try await Self.get(server, SecurityPolicy(trustedCertificateAuthorities: authorities, clientIdentity: right))
        #expect(accepted.error == nil, "\(String(describing: accepted.error))")
        let wrong = try ClientIdentity(certificateFile: certificateFile, privateKeyFile: encryptedKey, passphrase: "wrong")
        let refused = try await Self.get(server, SecurityPolicy(trustedCertificateAuthorities: authorities, clientIdentity: wrong))
        #expect(refused.urlErrorCode == .clientCertificateRejected, "\(String(describing: refused.error))")
        #expect(server.http.receivedRequests.count == 1)

        // No passphrase for an encrypted key: OpenSSL would ask on the terminal, on the
        // network thread. The identity is refused when it is made.
        #expect(throws: SecurityError.self) {
            try ClientIdentity(certificateFile: certificateFile, privateKeyFile: encryptedKey)
        }
        // A key file encrypted after the identity was made (renewed in place) fails at
        // once, with no prompt.
        let renewed = try folder.write("renewed.key", Self.certificates.client.privateKeyPEM)
        let later = try ClientIdentity(certificateFile: certificateFile, privateKeyFile: renewed)
        try FileManager.default.removeItem(at: renewed)
        try FileManager.default.copyItem(at: encryptedKey, to: renewed)
        let prompted = try await Self.get(server, SecurityPolicy(trustedCertificateAuthorities: authorities, clientIdentity: later))
        #expect(prompted.urlErrorCode == .clientCertificateRejected, "\(String(describing: prompted.error))")
        #expect(server.http.receivedRequests.count == 1)
    }

    /// Secrets never show in a description, a debug description or a dump.
    @Test func descriptionsRedactPassphrasesAndPasswords() throws {
        let identity = try ClientIdentity(certificate: .pem(Data(Self.certificates.client.certificatePEM.utf8)),
                                          privateKey: .pem(Data(Self.certificates.client.privateKeyPEM.utf8)),
                                          passphrase: "hunter2-passphrase")
        let proxy = try Proxy(URL(string: "http://proxy.test:3128")!, user: "ada", password: "hunter2-password")
        let inURL = try Proxy(URL(string: "http://ada:hunter2-in-url@proxy.test:3128")!)
        for (value, secret) in [(identity as Any, "hunter2-passphrase"), (proxy as Any, "hunter2-password"),
                                (inURL as Any, "hunter2-in-url")] {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), dumped, "\(value)"] {
                #expect(!text.contains(secret), "\(text)")
                #expect(text.contains("redacted"), "\(text)")
            }
        }
    }

    @Test func theMinimumTLSVersionIsEnforced() async throws {
        let server = try TLSTestServer.start(.tls12Only)
        defer { server.shutdown() }
        let authorities = [try Self.certificate(Self.certificates.root)]
        #expect(try await Self.get(server, SecurityPolicy(trustedCertificateAuthorities: authorities)).error == nil)
        let modern = try SecurityPolicy(trustedCertificateAuthorities: authorities, minimumTLSVersion: .v1_3)
        let outcome = try await Self.get(server, modern)
        #expect(outcome.urlErrorCode == .secureConnectionFailed, "\(String(describing: outcome.error))")
        #expect(server.http.receivedRequests.count == 1)
    }

    // MARK: - The server-trust block

    @Test func aServerTrustBlockJudgesEachNewServerOnceOffTheNetworkThread() async throws {
        let server = try TLSTestServer.start(.selfSigned)
        defer { server.shutdown() }
        let lax = try SecurityPolicy(allowInvalidCertificates: true, validatesDomainName: false)
        let expected = Self.certificates.selfSignedLeaf.certificateDER
        let asked = Mutex<[String]>([])
        let manager = HTTPRequestOperationManager()
        manager.responseSerializer = HTTPResponseSerializer()
        manager.securityPolicy = lax
        manager.setServerTrustEvaluationBlock { _, trust in
            let onNetworkThread = NetworkThread.shared.isCurrentThread
            asked.withLock { $0.append("\(trust.host):\(trust.port) network=\(onNetworkThread)") }
            return trust.certificates.first?.derEncoded == expected
        }
        for _ in 0..<3 {
            let op = manager.httpRequestOperation(with: URLRequest(url: server.http.url(.bytes(10))), success: nil, failure: nil)
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        }
        #expect(asked.withLock { $0 } == ["127.0.0.1:\(server.http.port) network=false"])
        #expect(server.http.receivedRequests.count == 3)
        // The connection the question stopped is closed; the approved one serves the rest.
        #expect(server.http.acceptedConnections == 2)
    }

    @Test func aServerTrustBlockThatSaysNoSendsNothing() async throws {
        let server = try TLSTestServer.start(.impostor)
        defer { server.shutdown() }
        let op = HTTPRequestOperation(request: URLRequest(url: server.http.url(.bytes(10))))
        op.securityPolicy = try SecurityPolicy(allowInvalidCertificates: true, validatesDomainName: false)
        let expected = Self.certificates.selfSignedLeaf.certificateDER
        op.setServerTrustEvaluationBlock { _, trust in trust.certificates.first?.derEncoded == expected }
        let outcome = try await run(op)
        #expect((outcome.error as? SecurityError)?.reason == .serverTrustRefused(host: "127.0.0.1"), "\(String(describing: outcome.error))")
        #expect(server.http.receivedRequests.isEmpty)
    }

    @Test func aServerTrustBlockCannotAcceptWhatThePolicyRefused() async throws {
        let server = try TLSTestServer.start(.selfSigned)
        defer { server.shutdown() }
        let op = HTTPRequestOperation(request: URLRequest(url: server.http.url(.bytes(10))))
        let asked = Mutex(0)
        op.setServerTrustEvaluationBlock { _, _ in
            asked.withLock { $0 += 1 }
            return true
        }
        #expect(try await run(op).urlErrorCode == .serverCertificateUntrusted)
        #expect(asked.withLock { $0 } == 0)
        #expect(server.http.receivedRequests.isEmpty)
    }
}

extension AllTests.SecurityPolicyTests {
    /// A response to a request made with one client certificate is never the cache's answer
    /// to a request with another or none: the certificate is who the request speaks for, as
    /// a credential is, though nothing in the request shows it. (The second request was
    /// answered from the cache with the first one's `private` response; it must go to the
    /// server, which refuses a client without a certificate.)
    @Test func oneClientCertificatesAnswerIsNeverAnothersFromTheCache() async throws {
        let server = try TLSTestServer.start(.requiresClientCertificate)
        defer { server.shutdown() }
        let authorities = [try Self.certificate(Self.certificates.root)]
        let client = try ClientIdentity(certificate: .pem(Data(Self.certificates.client.certificatePEM.utf8)),
                                        privateKey: .pem(Data(Self.certificates.client.privateKeyPEM.utf8)))
        let cache = try HTTPCache()
        let url = server.http.url(.cacheable(key: "mtls-\(UUID().uuidString)", cacheControl: "private, max-age=600"))
        func get(_ identity: ClientIdentity?) async throws -> HTTPRequestOperation {
            let operation = HTTPRequestOperation(request: URLRequest(url: url))
            operation.securityPolicy = try SecurityPolicy(trustedCertificateAuthorities: authorities, clientIdentity: identity)
            operation.configuration.cache = cache
            _ = try await run(operation)
            return operation
        }
        let first = try await get(client)
        #expect(first.error == nil, "\(String(describing: first.error))")
        #expect(try await get(client).cacheResult == .hit)
        let without = try await get(nil)
        #expect(without.cacheResult != .hit, "the certificate holder's answer was given to a request without one")
        #expect(without.error != nil)
    }
}
