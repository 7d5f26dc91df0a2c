import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
import Testing

/// The security policy against the in-process TLS server (NIOSSL, certificates made in
/// memory): pinning in both modes, match and mismatch, leaf and CA pins, the host check,
/// connection reuse across policies, mutual TLS, minimum TLS version, per-host policies.
/// Every refusal is also checked on the server's side: no request reached it.
extension AllTests {
    @Suite struct SecurityPolicyTests {
        static let certificates = TestCertificates.shared

        static func certificate(_ identity: TestIdentity) throws -> TLSCertificate {
            try TLSCertificate(derEncoded: identity.certificateDER)
        }

        /// Trusts the test root (the server sends its leaf and the intermediate).
        static func trustingTheTestRoot(pinningMode: SecurityPolicy.PinningMode = .none, pinnedCertificates: [TLSCertificate] = [],
                                        pinnedPublicKeys: [PublicKeyPin] = []) throws -> SecurityPolicy {
            try SecurityPolicy(pinningMode: pinningMode, pinnedCertificates: pinnedCertificates, pinnedPublicKeys: pinnedPublicKeys,
                               trustedCertificateAuthorities: [certificate(certificates.root)])
        }

        /// Runs one GET of 100 bytes on `server` under `policy`.
        static func get(_ server: TLSTestServer, _ policy: SecurityPolicy, host: String = "127.0.0.1") async throws -> Outcome {
            let op = HTTPRequestOperation(request: URLRequest(url: server.http.url(.bytes(100), host: host)))
            op.securityPolicy = policy
            return try await run(op)
        }

        // MARK: - Public-key pinning

        @Test(arguments: ["leaf", "intermediate"])
        func aPublicKeyPinOfAnyCertificateOfTheChainIsAccepted(pinned: String) async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let pin = try PublicKeyPin(pinned == "leaf" ? Self.certificates.leaf.publicKeyPin : Self.certificates.intermediate.publicKeyPin)
            let outcome = try await Self.get(server, Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedPublicKeys: [pin]))
            #expect(outcome.error == nil, "pinned \(pinned): \(String(describing: outcome.error))")
            #expect(outcome.data?.count == 100)
        }

        @Test func aPublicKeyMismatchIsRefusedBeforeAnyRequestIsSent() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let pin = try PublicKeyPin(Self.certificates.impostorLeaf.publicKeyPin)
            let outcome = try await Self.get(server, Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedPublicKeys: [pin]))
            let error = try #require(outcome.error as? SecurityError)
            #expect(error.code == .pinMismatch)
            #expect(error.reason == .pinMismatch(host: "127.0.0.1", mode: .publicKey, expected: [pin.description],
                                                 received: [Self.certificates.leaf.publicKeyPin, Self.certificates.intermediate.publicKeyPin,
                                                            Self.certificates.root.publicKeyPin]))
            #expect(error.description.contains("127.0.0.1") && error.description.contains(pin.description))
            #expect(server.http.receivedRequests.isEmpty, "a request reached the server: \(server.http.receivedRequests)")
        }

        @Test func aPinnedCertificateSuppliesItsPublicKeyInPublicKeyMode() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let policy = try Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedCertificates: [Self.certificate(Self.certificates.intermediate)])
            #expect(try await Self.get(server, policy).error == nil)
        }

        // MARK: - Certificate pinning

        @Test func aPinnedSelfSignedCertificateIsItsOwnAnchor() async throws {
            let server = try TLSTestServer.start(.selfSigned)
            defer { server.shutdown() }
            let policy = try SecurityPolicy.policy(withPinningMode: .certificate, pinnedCertificates: [Self.certificate(Self.certificates.selfSignedLeaf)])
            let outcome = try await Self.get(server, policy)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        }

        @Test func anotherServerWithTheSameNamesIsRefusedUnderCertificatePinning() async throws {
            let server = try TLSTestServer.start(.impostor)
            defer { server.shutdown() }
            let policy = try SecurityPolicy.policy(withPinningMode: .certificate, pinnedCertificates: [Self.certificate(Self.certificates.selfSignedLeaf)])
            let outcome = try await Self.get(server, policy)
            // The pins are the only anchors: the handshake itself fails.
            #expect(outcome.urlErrorCode == .serverCertificateUntrusted, "\(String(describing: outcome.error))")
            #expect(server.http.receivedRequests.isEmpty)
        }

        @Test func aPinnedIntermediateAnchorsTheLeavesItSigned() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let policy = try SecurityPolicy.policy(withPinningMode: .certificate, pinnedCertificates: [Self.certificate(Self.certificates.intermediate)])
            #expect(try await Self.get(server, policy).error == nil)
            // A pinned root the server does not send anchors the chain it signed too.
            let root = try SecurityPolicy.policy(withPinningMode: .certificate, pinnedCertificates: [Self.certificate(Self.certificates.root)])
            let rootPinned = try await Self.get(server, root)
            #expect(rootPinned.error == nil, "\(String(describing: rootPinned.error))")
            // Nothing else anchors anything under certificate pinning: a pin of another
            // certificate refuses the same server.
            let stranger = try SecurityPolicy.policy(withPinningMode: .certificate, pinnedCertificates: [Self.certificate(Self.certificates.selfSignedLeaf)])
            #expect(try await Self.get(server, stranger).urlErrorCode == .serverCertificateUntrusted)
        }

        @Test func withInvalidCertificatesAllowedAPinnedCertificateMustStillBeInTheChain() async throws {
            let server = try TLSTestServer.start(.impostor)
            defer { server.shutdown() }
            let policy = try SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [Self.certificate(Self.certificates.selfSignedLeaf)],
                                            allowInvalidCertificates: true)
            let outcome = try await Self.get(server, policy)
            let error = try #require(outcome.error as? SecurityError, "\(String(describing: outcome.error))")
            #expect(error.code == .pinMismatch)
            #expect(server.http.receivedRequests.isEmpty)
            // The same policy accepts the pinned server.
            let pinnedServer = try TLSTestServer.start(.selfSigned)
            defer { pinnedServer.shutdown() }
            #expect(try await Self.get(pinnedServer, policy).error == nil)
        }

        // MARK: - Chain and host

        @Test func allowingInvalidCertificatesKeepsTheHostCheck() async throws {
            let server = try TLSTestServer.start(.wrongHost)
            defer { server.shutdown() }
            let pin = try PublicKeyPin(Self.certificates.wrongHostLeaf.publicKeyPin)
            let checked = try SecurityPolicy(pinningMode: .publicKey, pinnedPublicKeys: [pin], allowInvalidCertificates: true)
            let outcome = try await Self.get(server, checked)
            #expect(outcome.urlErrorCode == .serverCertificateUntrusted, "\(String(describing: outcome.error))")
            #expect(server.http.receivedRequests.isEmpty)
            let unchecked = try SecurityPolicy(pinningMode: .publicKey, pinnedPublicKeys: [pin], allowInvalidCertificates: true,
                                               validatesDomainName: false)
            #expect(try await Self.get(server, unchecked).error == nil)
        }

        @Test(arguments: [TLSTestServer.Configuration.expired, .wrongHost, .selfSigned])
        func aChainNoAuthorityVouchesForIsRefused(configuration: TLSTestServer.Configuration) async throws {
            let server = try TLSTestServer.start(configuration)
            defer { server.shutdown() }
            let outcome = try await Self.get(server, Self.trustingTheTestRoot())
            #expect(outcome.urlErrorCode == .serverCertificateUntrusted, "\(configuration): \(String(describing: outcome.error))")
            #expect(server.http.receivedRequests.isEmpty)
        }

        // MARK: - Connection reuse

        @Test func aConnectionMadeUnderALaxPolicyIsNeverReusedByAStrictOne() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let lax = try Self.trustingTheTestRoot()
            #expect(try await Self.get(server, lax).error == nil)
            let wrongPin = try PublicKeyPin(Self.certificates.impostorLeaf.publicKeyPin)
            let strict = try Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedPublicKeys: [wrongPin])
            let outcome = try await Self.get(server, strict)
            #expect((outcome.error as? SecurityError)?.code == .pinMismatch,
                    "the strict policy rode the lax policy's connection: \(String(describing: outcome.error))")
            #expect(server.http.receivedRequests.count == 1)
            #expect(server.http.acceptedConnections == 2)
        }

        @Test func connectionsAreStillReusedUnderOnePinningPolicy() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let pin = try PublicKeyPin(Self.certificates.leaf.publicKeyPin)
            let policy = try Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedPublicKeys: [pin])
            for _ in 0..<4 {
                #expect(try await Self.get(server, policy).error == nil)
            }
            // Equal policies made apart are the same policy to libcurl.
            let again = try Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedPublicKeys: [pin])
            #expect(try await Self.get(server, again).error == nil)
            #expect(server.http.acceptedConnections == 1)
            #expect(server.http.receivedRequests.count == 5)
        }

        @Test func aFailedPinCheckDoesNotLeaveItsConnectionForTheNextRequest() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let wrongPin = try PublicKeyPin(Self.certificates.impostorLeaf.publicKeyPin)
            let strict = try Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedPublicKeys: [wrongPin])
            for _ in 0..<3 {
                #expect((try await Self.get(server, strict).error as? SecurityError)?.code == .pinMismatch)
            }
            #expect(server.http.receivedRequests.isEmpty)
            #expect(server.http.acceptedConnections == 3)
        }

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

        // MARK: - Per-host policies

        @Test func aLaxPolicyForOneHostNeverAppliesToAnother() async throws {
            let server = try TLSTestServer.start(.selfSigned)
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            let lax = try SecurityPolicy(allowInvalidCertificates: true, validatesDomainName: false)
            manager.setSecurityPolicy(lax, forHost: "LOCALHOST")
            #expect(manager.securityPolicy(forHost: "localhost") == lax)
            #expect(manager.securityPolicy(forHost: "127.0.0.1") == .default)

            func get(_ url: URL) async throws -> Outcome {
                try await run(manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil))
            }
            #expect(try await get(server.http.url(.bytes(10), host: "localhost")).error == nil)
            #expect(try await get(server.http.url(.bytes(10), host: "127.0.0.1")).urlErrorCode == .serverCertificateUntrusted)
            // A redirect from the lax host to another host is trusted under that host's policy.
            let elsewhere = server.http.url(.bytes(10), host: "127.0.0.1").absoluteString
            let redirected = try await get(server.http.url(.redirectTo(elsewhere, status: 302), host: "localhost"))
            #expect(redirected.urlErrorCode == .serverCertificateUntrusted, "\(String(describing: redirected.error))")
            #expect(server.http.receivedRequests.map(\.uri).filter { $0.hasPrefix("/bytes") }.count == 1)
        }

        /// The report: a pin set for `127.0.0.1` was skipped by spelling the address `127.1`
        /// (Foundation's `URL.host` keeps it as written, curl connects to `127.0.0.1`), and an
        /// impostor answered 200. Each spelling curl reads as that address gets its policy.
        @Test(arguments: ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.0.0.1"])
        func aPinCannotBeDodgedBySpellingTheAddress(spelling: String) async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let wrongPin = try PublicKeyPin(Self.certificates.untrustedClient.publicKeyPin)
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            manager.securityPolicy = try Self.trustingTheTestRoot()
            manager.setSecurityPolicy(try Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedPublicKeys: [wrongPin]),
                                      forHost: "127.0.0.1")
            let url = server.http.url(.bytes(10), host: spelling)
            let outcome = try await run(manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil))
            #expect((outcome.error as? SecurityError)?.code == .pinMismatch, "\(spelling): \(String(describing: outcome.error))")
            #expect(server.http.receivedRequests.isEmpty)
        }

        @Test func hostNamesAreReadAsCurlConnects() {
            #expect(HostName.canonical("127.1") == "127.0.0.1")
            #expect(HostName.canonical("0X7F.1") == "127.0.0.1")
            #expect(HostName.canonical("Example.COM.") == "example.com")
            #expect(HostName.canonical("[::FFFF:127.0.0.1]") == "::ffff:127.0.0.1")
            #expect(HostName.canonical("0:0:0:0:0:0:0:1") == "::1")
            #expect(HostName.canonical("1.2.3.4.example") == "1.2.3.4.example")
            #expect(HostName.canonical("deadbeef") == "deadbeef", "a name, not hexadecimal without 0x")
            #expect(HostName.canonical("4294967296") == "4294967296", "past 32 bits: no address")
            #expect(HostSecurityPolicies.normalized("2130706433") == "127.0.0.1")
        }

        @Test func anOperationsPolicyIsItsHostsOnly() throws {
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "https://dev.example:8443/x")!))
            let lax = try SecurityPolicy(allowInvalidCertificates: true, validatesDomainName: false)
            op.securityPolicy = lax
            #expect(op.securityPolicy == lax)
            #expect(op.securityPolicies.policy(for: "dev.example") == lax)
            #expect(op.securityPolicies.policy(for: "api.example") == .default)
        }

        // MARK: - The check itself, without I/O

        @Test func theCheckComparesTheVerifiedPathWithThePinsAndRefusesAConnectionWithoutOne() throws {
            let leaf = Self.certificates.leaf, intermediate = Self.certificates.intermediate
            let path = [leaf.certificateDER, intermediate.certificateDER]
            let keyPolicy = try Self.trustingTheTestRoot(pinningMode: .publicKey, pinnedPublicKeys: [PublicKeyPin(intermediate.publicKeyPin)])
            #expect(ServerTrustCheck(policy: keyPolicy, host: "h").evaluate(path: path) == nil)
            #expect(ServerTrustCheck(policy: keyPolicy, host: "h").evaluate(path: [leaf.certificateDER])?.code == .pinMismatch)
            // No path (reused or new connection alike): refused.
            #expect(ServerTrustCheck(policy: keyPolicy, host: "h").evaluate(path: nil)?.code == .certificateChainUnavailable)
            #expect(ServerTrustCheck(policy: keyPolicy, host: "h").evaluate(path: [])?.code == .certificateChainUnavailable)
            #expect(ServerTrustCheck(policy: keyPolicy, host: "h").evaluate(path: [Data("garbage".utf8)]) != nil)
            // Certificate mode: a pinned certificate must be on the path.
            let laxCertificates = try SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [Self.certificate(intermediate)],
                                                     allowInvalidCertificates: true)
            #expect(ServerTrustCheck(policy: laxCertificates, host: "h").evaluate(path: path) == nil)
            #expect(ServerTrustCheck(policy: laxCertificates, host: "h").evaluate(path: [leaf.certificateDER])?.code == .pinMismatch)
            // No pins, nothing to check.
            #expect(ServerTrustCheck(policy: .default, host: "h").evaluate(path: nil) == nil)
        }

        /// `pinned.example.com.` is the same host as `pinned.example.com` (a fully qualified
        /// name): it gets that host's policy, whichever way either is spelled.
        @Test func aHostWithATrailingDotGetsItsHostsPolicy() throws {
            let pinned = try SecurityPolicy(pinningMode: .publicKey, pinnedPublicKeys: [PublicKeyPin(Self.certificates.leaf.publicKeyPin)])
            var policies = HostSecurityPolicies(byHost: ["Pinned.Example.com": pinned])
            #expect(policies.policy(for: "pinned.example.com.") == pinned)
            #expect(policies.policy(for: "PINNED.example.com") == pinned)
            #expect(policies.policy(forHostOf: URL(string: "https://pinned.example.com.:8443/x")) == pinned)
            #expect(policies.policy(for: "other.example.com.") == .default)
            policies.setPolicy(nil, for: "pinned.example.com.")
            #expect(policies.policy(for: "pinned.example.com") == .default)
            #expect(HostSecurityPolicies(byHost: ["dotted.example.": pinned]).policy(for: "dotted.example") == pinned)
        }

        // MARK: - Policies that make no sense

        @Test func contradictoryPoliciesAreRefusedWhenTheyAreMade() throws {
            let pin = try PublicKeyPin(Self.certificates.leaf.publicKeyPin)
            let certificate = try Self.certificate(Self.certificates.leaf)
            let refused: [(String, () throws -> SecurityPolicy)] = [
                ("invalid allowed + domain validated + no pins", { try SecurityPolicy(allowInvalidCertificates: true) }),
                ("public-key mode without pins", { try SecurityPolicy(pinningMode: .publicKey) }),
                ("certificate mode without pins", { try SecurityPolicy(pinningMode: .certificate) }),
                ("pins with mode none", { try SecurityPolicy(pinnedPublicKeys: [pin]) }),
                ("pinned certificates with mode none", { try SecurityPolicy(pinnedCertificates: [certificate]) }),
                ("key pins in certificate mode", { try SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [certificate], pinnedPublicKeys: [pin]) }),
                ("an empty list of authorities", { try SecurityPolicy(trustedCertificateAuthorities: []) }),
                ("authorities besides the pinned anchors", {
                    try SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [certificate], trustedCertificateAuthorities: [certificate])
                }),
            ]
            for (name, make) in refused {
                #expect(throws: SecurityError.self, "\(name)") { try make() }
                #expect((try? make()) == nil)
                do { _ = try make() } catch let error as SecurityError { #expect(error.code == .invalidPolicy, "\(name)") }
            }
            // And what AFNetworking accepts, with pins, is accepted.
            _ = try SecurityPolicy(pinningMode: .publicKey, pinnedPublicKeys: [pin], allowInvalidCertificates: true)
            _ = try SecurityPolicy(allowInvalidCertificates: true, validatesDomainName: false)
        }

        @Test func pinsReadCurlsFormAndRefuseOthers() throws {
            let pin = try PublicKeyPin(Self.certificates.leaf.publicKeyPin)
            #expect(pin.description == Self.certificates.leaf.publicKeyPin)
            #expect(try Self.certificate(Self.certificates.leaf).publicKeyPin == pin)
            for bad in ["", "sha256//", "sha1//AAAA", "sha256//not base64!", "sha256//" + Data(count: 20).base64EncodedString()] {
                #expect(throws: SecurityError.self, "\(bad)") { try PublicKeyPin(bad) }
            }
        }

        @Test func certificatesAreReadFromPEMDERFilesAndFolders() throws {
            let folder = try TemporaryFolder()
            let pem = try folder.write("chain.pem", Self.certificates.leaf.certificatePEM + Self.certificates.intermediate.certificatePEM)
            let der = folder.url.appendingPathComponent("root.der")
            try Self.certificates.root.certificateDER.write(to: der)
            try folder.write("notes.txt", "not a certificate")
            #expect(try TLSCertificate.certificates(contentsOf: pem).count == 2)
            #expect(try TLSCertificate.certificates(contentsOf: der).map(\.derEncoded) == [Self.certificates.root.certificateDER])
            let all = try TLSCertificate.certificates(contentsOf: folder.url)
            #expect(all.count == 3)
            #expect(throws: SecurityError.self) { try TLSCertificate.certificates(contentsOf: folder.url.appendingPathComponent("notes.txt")) }
            #expect(throws: SecurityError.self) { try TLSCertificate.certificates(contentsOf: folder.url.appendingPathComponent("missing.pem")) }
        }
    }
}

/// A folder under the temporary directory, removed when the value is released.
final class TemporaryFolder: @unchecked Sendable {
    // @unchecked: immutable after init.
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `text` to `name` in the folder and returns its URL.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> URL {
        let file = url.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
