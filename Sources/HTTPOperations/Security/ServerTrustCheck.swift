import Foundation

/// Compares the certification path a connection was verified on with a policy's pins. Pure:
/// the transfer hands it the path OpenSSL verified (`SSL_get0_verified_chain`, read through
/// libcurl's `CURLINFO_TLS_SSL_PTR`) in `CURLOPT_PREREQFUNCTION`, after the handshake and
/// before the first byte of each request, and aborts when it says no.
///
/// What the path is, and why not the certificates the server sent: a server may send any
/// certificate it likes (certificates are public), so a mis-issued certificate for the host,
/// with a key of its own, followed by the real server's certificate, would pass a check of
/// what was *sent*. The verified path runs from the leaf, whose key the handshake proved, to
/// the anchor that vouched for it, anchor included, whether or not the server sent it. That
/// is what AFNetworking 2 compared too (the keys of the evaluated trust), so a pin of a CA's
/// key works whether the server sends the CA or not, and survives leaf rotation.
///
/// - ``SecurityPolicy/PinningMode/publicKey``: some certificate on the path has a pinned
///   public key (leaf, intermediate or anchor).
/// - ``SecurityPolicy/PinningMode/certificate``: a pinned certificate is on the path (the
///   pins are libcurl's only anchors, so a verified path ends at one of them).
/// - With invalid certificates allowed (nothing was verified), the path is the certificates
///   whose signatures chain from the leaf: the pin must still be proven by the handshake.
///
/// Every transfer is checked, on a new connection or a reused one (an HTTP/2 stream
/// multiplexed onto a connection included): the path belongs to the connection, and a
/// transfer without one is refused.
struct ServerTrustCheck {
    let policy: SecurityPolicy
    let host: String

    /// The refusal, or nil when the connection may carry the request.
    ///
    /// - Parameter path: The DER of each certificate on the verified path, leaf first; nil
    ///   when the connection has none (no TLS session, or one resumed without a handshake).
    func evaluate(path: [Data]?) -> SecurityError? {
        switch parse(path) {
        case .success(let certificates): evaluate(certificates: certificates)
        case .failure(let refusal): policy.pinningMode == .none ? nil : refusal
        }
    }

    /// The certificates of `path`, parsed once for every check that needs them; a missing
    /// path, or one that does not parse, is a refusal.
    ///
    /// - Parameter cache: Paths parsed before (the network thread's), or nil to parse anew.
    func parse(_ path: [Data]?, cache: VerifiedPathCache? = nil) -> Result<[TLSCertificate], SecurityError> {
        guard let path, !path.isEmpty else { return .failure(SecurityError(.certificateChainUnavailable(host: host))) }
        let parse: ([Data]) throws -> [TLSCertificate] = { try $0.map { try TLSCertificate(derEncoded: $0) } }
        do {
            return .success(try cache?.certificates(of: path, parse: parse) ?? parse(path))
        } catch {
            return .failure(error as? SecurityError ?? SecurityError(.certificateChainUnavailable(host: host)))
        }
    }

    /// ``evaluate(path:)`` for a path already parsed.
    func evaluate(certificates: [TLSCertificate]) -> SecurityError? {
        guard policy.pinningMode != .none else { return nil }
        guard !certificates.isEmpty else { return SecurityError(.certificateChainUnavailable(host: host)) }
        switch policy.pinningMode {
        case .none:
            return nil
        case .publicKey:
            if certificates.contains(where: { policy.pinnedPublicKeys.contains($0.publicKeyPin) }) { return nil }
            return SecurityError(.pinMismatch(host: host, mode: .publicKey,
                                              expected: policy.pinnedPublicKeys.map(\.description).sorted(),
                                              received: certificates.map(\.publicKeyPin.description)))
        case .certificate:
            let pinned = Set(policy.pinnedCertificates.map(\.derEncoded))
            if certificates.contains(where: { pinned.contains($0.derEncoded) }) { return nil }
            return SecurityError(.pinMismatch(host: host, mode: .certificate,
                                              expected: policy.pinnedCertificates.map(\.fingerprint).sorted(),
                                              received: certificates.map(\.fingerprint)))
        }
    }
}
