import Foundation

/// Compares the certificate chain a server showed with a policy's pins. Pure: the transfer
/// hands it what libcurl reported (`CURLINFO_CERTINFO`) in `CURLOPT_PREREQFUNCTION`, after
/// the handshake and before the first byte of the request, and aborts when it says no.
///
/// What libcurl has already done by then: verified the chain against the policy's anchors
/// (unless invalid certificates are allowed) and the host name (unless not validated). What
/// is left is the pins:
///
/// - ``SecurityPolicy/PinningMode/publicKey``: some certificate the server sent (leaf or
///   intermediate; a root only if sent) has a pinned public key. libcurl's own
///   `CURLOPT_PINNEDPUBLICKEY` looks at the leaf only, which would break pinning an
///   intermediate, as AFNetworking users do, so the whole chain is checked here.
/// - ``SecurityPolicy/PinningMode/certificate``: the pinned certificates are libcurl's only
///   anchors, so a verified chain leads to one of them, whether the server sends it or not.
///   When invalid certificates are allowed (nothing was verified), a pinned certificate must
///   be among those sent, byte for byte.
///
/// A reused connection shows no chain: it was checked when it was made, under the same
/// policy (the policy's identity is part of libcurl's connection match, see
/// ``SecurityPolicy``). A new connection that shows none is refused.
struct ServerTrustCheck {
    let policy: SecurityPolicy
    let host: String

    /// The refusal, or nil when the connection may carry the request.
    ///
    /// - Parameters:
    ///   - chain: The PEM of each certificate the server sent, leaf first; empty when libcurl
    ///     reported none.
    ///   - isNewConnection: The connection was made for this transfer.
    func evaluate(chain: [String], isNewConnection: Bool) -> SecurityError? {
        switch parse(chain) {
        case .success(let certificates): evaluate(certificates: certificates, isNewConnection: isNewConnection)
        case .failure(let refusal): policy.pinningMode == .none ? nil : refusal
        }
    }

    /// The certificates of `chain` (PEM, as libcurl reports them), parsed once for every
    /// check that needs them; a chain that does not parse is a refusal.
    func parse(_ chain: [String]) -> Result<[TLSCertificate], SecurityError> {
        do {
            return .success(try chain.flatMap { try TLSCertificate.certificates(in: Data($0.utf8), source: "(\(host)'s chain)") })
        } catch {
            return .failure(error as? SecurityError ?? SecurityError(.certificateChainUnavailable(host: host)))
        }
    }

    /// ``evaluate(chain:isNewConnection:)`` for a chain already parsed.
    func evaluate(certificates: [TLSCertificate], isNewConnection: Bool) -> SecurityError? {
        guard policy.pinningMode != .none else { return nil }
        guard !certificates.isEmpty else {
            return isNewConnection ? SecurityError(.certificateChainUnavailable(host: host)) : nil
        }
        switch policy.pinningMode {
        case .none:
            return nil
        case .publicKey:
            if certificates.contains(where: { policy.pinnedPublicKeys.contains($0.publicKeyPin) }) { return nil }
            return SecurityError(.pinMismatch(host: host, mode: .publicKey,
                                              expected: policy.pinnedPublicKeys.map(\.description).sorted(),
                                              received: certificates.map(\.publicKeyPin.description)))
        case .certificate:
            // Verified against the pins as sole anchors: the chain ends at one of them.
            if !policy.allowInvalidCertificates { return nil }
            let pinned = Set(policy.pinnedCertificates.map(\.derEncoded))
            if certificates.contains(where: { pinned.contains($0.derEncoded) }) { return nil }
            return SecurityError(.pinMismatch(host: host, mode: .certificate,
                                              expected: policy.pinnedCertificates.map(\.fingerprint).sorted(),
                                              received: certificates.map(\.fingerprint)))
        }
    }
}
