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

        /// A plain GET's easy handle keeps its policy's anchors for the next plain GET under the
        /// same policy (EasyHandlePool): one under the default policy, or trusting other
        /// authorities, must never be sent on such a handle (nor on its connection).
        @Test func aHandleKeepsItsPolicysAuthoritiesForThatPolicyAlone() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let ownRoot = try Self.trustingTheTestRoot()
            for _ in 0..<3 {
                #expect(try await Self.get(server, ownRoot).error == nil)
            }
            let other = try SecurityPolicy(trustedCertificateAuthorities: [Self.certificate(Self.certificates.selfSignedLeaf)])
            for policy in [SecurityPolicy.default, other, .default] {
                let outcome = try await Self.get(server, policy)
                #expect(outcome.urlErrorCode == .serverCertificateUntrusted,
                        "a GET under \(policy) was not refused: \(String(describing: outcome.error))")
            }
            #expect(try await Self.get(server, ownRoot).error == nil, "the trusting policy lost its handle's options")
            #expect(server.http.receivedRequests.count == 4)
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
