import Foundation
import HTTPTestServer
import NIOCore
import NIOSSL

/// A ``TestServer`` behind TLS (NIOSSL), with one of the ``TestCertificates`` configurations:
/// the good chain, an expired leaf, a leaf for the wrong host, a self-signed leaf, and
/// optionally a demand for a client certificate signed by the test root. Like every
/// ``TestServer`` it records the requests it receives, so a test can prove nothing was sent.
///
/// ```swift
/// let server = try TLSTestServer.start(.goodChain)
/// defer { server.shutdown() }
/// let url = server.http.url(.bytes(1_000))   // https://127.0.0.1:<port>/bytes/1000
/// ```
public final class TLSTestServer: Sendable {
    /// What the server shows and asks for.
    public enum Configuration: Sendable {
        /// The leaf for localhost and 127.0.0.1, sent with the intermediate that signed it.
        case goodChain
        /// An expired leaf, with its intermediate.
        case expired
        /// A leaf for `wrong.example`, with its intermediate.
        case wrongHost
        /// A self-signed leaf for localhost and 127.0.0.1, alone.
        case selfSigned
        /// Another self-signed leaf for the same names, alone: not the server pinned.
        case impostor
        /// A mis-issued leaf for the same names (the intermediate signed it, the key is the
        /// impostor's), sent with the intermediate and then the real leaf, appended: the
        /// pinned certificate is sent, but on no path that was verified.
        case misissuedWithTheRealLeafAppended
        /// The self-signed impostor leaf, then the real leaf and the intermediate, appended:
        /// for policies that allow invalid certificates.
        case selfSignedImpostorWithTheRealLeafAppended
        /// A leaf signed by the mis-issued leaf's key (an end entity), sent with the mis-issued
        /// leaf and the intermediate: linked by signatures, not by authority.
        case leafSignedByAnEndEntity
        /// A leaf naming the intermediate as issuer but signed by another key, sent with the
        /// intermediate: linked by names, not by signature.
        case forgedLeafWithTheIntermediate
        /// The good chain, and a client certificate signed by the test root is required.
        case requiresClientCertificate
        /// The good chain, over TLS 1.2 at most.
        case tls12Only
    }

    /// The HTTP server behind TLS: its URLs are `https://`.
    public let http: TestServer

    private init(http: TestServer) {
        self.http = http
    }

    /// Starts a server on 127.0.0.1 and a port the kernel picks.
    public static func start(_ configuration: Configuration) throws -> TLSTestServer {
        let certificates = TestCertificates.shared
        let (leaf, chain): (TestIdentity, [TestIdentity]) = switch configuration {
        case .goodChain, .requiresClientCertificate, .tls12Only: (certificates.leaf, [certificates.intermediate])
        case .expired: (certificates.expiredLeaf, [certificates.intermediate])
        case .wrongHost: (certificates.wrongHostLeaf, [certificates.intermediate])
        case .selfSigned: (certificates.selfSignedLeaf, [])
        case .impostor: (certificates.impostorLeaf, [])
        case .misissuedWithTheRealLeafAppended: (certificates.misissuedLeaf, [certificates.intermediate, certificates.leaf])
        case .selfSignedImpostorWithTheRealLeafAppended: (certificates.impostorLeaf, [certificates.leaf, certificates.intermediate])
        case .leafSignedByAnEndEntity: (certificates.leafSignedByALeaf, [certificates.misissuedLeaf, certificates.intermediate])
        case .forgedLeafWithTheIntermediate: (certificates.forgedLeaf, [certificates.intermediate])
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try ([leaf] + chain).map { .certificate(try NIOSSLCertificate(bytes: Array($0.certificatePEM.utf8), format: .pem)) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leaf.privateKeyPEM.utf8), format: .pem)))
        // Closing waits this long for the client's close_notify (default 5 s): libcurl keeps
        // idle connections and never sends one while the test shuts the server down.
        tls.shutdownTimeout = .milliseconds(50)
        if case .tls12Only = configuration {
            tls.maximumTLSVersion = .tlsv12
        }
        if case .requiresClientCertificate = configuration {
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(certificates.root.certificatePEM.utf8), format: .pem)])
        }
        let context = try NIOSSLContext(configuration: tls)
        let http = try TestServer.start(scheme: "https") { channel in
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
        }
        return TLSTestServer(http: http)
    }

    /// Stops listening and closes every connection.
    public func shutdown() {
        http.shutdown()
    }
}
