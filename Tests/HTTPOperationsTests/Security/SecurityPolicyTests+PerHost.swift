import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
import Testing

/// Per-host policies, the pin check without I/O, and policies that make no sense.
extension AllTests.SecurityPolicyTests {
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
        #expect(op.configuration.securityPolicies.policy(for: "dev.example") == lax)
        #expect(op.configuration.securityPolicies.policy(for: "api.example") == .default)
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
