import Foundation
import HTTPTestServer
import NIOCore
import NIOSSL

/// TLS in front of a raw loopback server (an ``AdversarialResumeServer`` say): it shows the
/// good chain of ``TestCertificates`` (leaf for localhost and 127.0.0.1, with its
/// intermediate) and passes the decrypted bytes on to the backend port, and the backend's
/// back. The backend's FIN closes the TLS connection after the bytes before it; its reset
/// resets the client's connection. So an https URL on ``port`` is the raw server's answer,
/// faults included — and reaching it through an HTTP proxy takes a `CONNECT` tunnel.
public final class TLSRelay: Sendable {
    /// The loopback port the relay listens on: `https://127.0.0.1:<port>`.
    public var port: Int { relay.port }
    private let relay: ByteRelay

    private init(relay: ByteRelay) {
        self.relay = relay
    }

    /// Starts a relay on 127.0.0.1 and a port the kernel picks, to `127.0.0.1:<backendPort>`.
    public static func start(forwardingTo backendPort: Int) throws -> TLSRelay {
        let certificates = TestCertificates.shared
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try [certificates.leaf, certificates.intermediate].map {
                .certificate(try NIOSSLCertificate(bytes: Array($0.certificatePEM.utf8), format: .pem))
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificates.leaf.privateKeyPEM.utf8), format: .pem)))
        // The client closes without close_notify after a pause; don't wait for it long.
        tls.shutdownTimeout = .milliseconds(50)
        let context = try NIOSSLContext(configuration: tls)
        let relay = try ByteRelay.start(forwardingTo: backendPort) { channel in
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
        }
        return TLSRelay(relay: relay)
    }

    /// Stops listening and closes every connection.
    public func shutdown() {
        relay.shutdown()
    }
}
