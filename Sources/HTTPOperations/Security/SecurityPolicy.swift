import Crypto
import Foundation

/// How an operation decides whether to trust a server: the certificate authorities, pinning,
/// host-name validation, the client certificate it shows, and the lowest TLS version it
/// accepts. AFNetworking's `AFSecurityPolicy`, on libcurl (Docs/Security.md).
///
/// A policy is a value, checked when it is made: contradictory settings (a pinning mode
/// without pins, invalid certificates allowed with domain-name validation and no pins) throw
/// ``SecurityError`` `.invalidPolicy` from the initializer rather than fail, or pass, later.
///
/// Every check runs before any byte of the request is sent: libcurl verifies the chain and
/// the host name during the handshake; the pins are compared in `CURLOPT_PREREQFUNCTION`,
/// which runs after the handshake and before the request. A connection made under one policy
/// is never reused by a request under another (Docs/Security.md, "Connection reuse").
public struct SecurityPolicy: Sendable, Hashable {
    /// What is pinned.
    public enum PinningMode: Sendable, Hashable {
        /// Nothing: the chain must lead to a trusted authority, that is all.
        case none
        /// Public keys: some certificate of the chain the server shows (leaf, intermediate or
        /// root, as in AFNetworking) must have a pinned SubjectPublicKeyInfo, and the chain must
        /// also lead to a trusted authority (unless invalid certificates are allowed).
        case publicKey
        /// Certificates: the pinned certificates are the trust anchors (a pinned self-signed or
        /// leaf certificate anchors itself, as in AFNetworking), and the chain the server shows
        /// must contain one of them, byte for byte.
        case certificate
    }

    /// The lowest TLS version accepted (`CURLOPT_SSLVERSION`).
    public enum TLSVersion: Int, Sendable, Hashable, Comparable {
        /// TLS 1.2 and later: the default.
        case v1_2 = 12
        /// TLS 1.3 only.
        case v1_3 = 13

        public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Trust the system's certificate authorities, verify the chain and the host name, pin
    /// nothing, accept TLS 1.2 and later.
    public static let `default` = SecurityPolicy(unchecked: ())

    /// What is pinned. Default ``PinningMode/none``.
    public var pinningMode: PinningMode { storage.pinningMode }
    /// The pinned certificates: the anchors in ``PinningMode/certificate`` mode, the sources
    /// of public-key pins in ``PinningMode/publicKey`` mode.
    public var pinnedCertificates: [TLSCertificate] { storage.pinnedCertificates }
    /// Every public-key pin: those given, and those of ``pinnedCertificates``. Compared in
    /// ``PinningMode/publicKey`` mode.
    public var pinnedPublicKeys: Set<PublicKeyPin> { storage.pinnedPublicKeys }
    /// The certificate authorities to trust instead of the system's; nil trusts the system's
    /// (the bundle libcurl was built with, `/etc/ssl/certs/ca-certificates.crt` on Debian).
    public var trustedCertificateAuthorities: [TLSCertificate]? { storage.trustedCertificateAuthorities }
    /// Accept a chain that leads to no trusted authority (expired, self-signed, unknown CA).
    /// Pins are still checked, and so is the host name unless ``validatesDomainName`` is
    /// false: allowing invalid certificates never turns the host check off by itself. For
    /// development, or with pins. Default false.
    public var allowInvalidCertificates: Bool { storage.allowInvalidCertificates }
    /// Require the certificate to name the host the URL names. Default true.
    public var validatesDomainName: Bool { storage.validatesDomainName }
    /// The certificate shown to a server that asks for one (mutual TLS). Default nil.
    public var clientIdentity: ClientIdentity? { storage.clientIdentity }
    /// The lowest TLS version accepted. Default ``TLSVersion/v1_2``.
    public var minimumTLSVersion: TLSVersion { storage.minimumTLSVersion }
    /// A digest of every setting above: equal policies have equal identities, and libcurl
    /// is told it, so that no connection crosses from one policy to another.
    var identity: String { storage.identity }

    /// Creates a policy, refusing settings that contradict each other.
    ///
    /// - Parameters:
    ///   - pinningMode: What is pinned.
    ///   - pinnedCertificates: Certificates to pin (see ``TLSCertificate/certificates(contentsOf:)``
    ///     to read files and folders, DER or PEM).
    ///   - pinnedPublicKeys: Public-key pins in ``PinningMode/publicKey`` mode, besides those of
    ///     `pinnedCertificates` (curl's `sha256//BASE64`, see ``PublicKeyPin``).
    ///   - trustedCertificateAuthorities: Authorities to trust instead of the system's.
    ///   - allowInvalidCertificates: Accept chains no authority vouches for.
    ///   - validatesDomainName: Require the certificate to name the host.
    ///   - clientIdentity: The client certificate for mutual TLS.
    ///   - minimumTLSVersion: The lowest TLS version accepted.
    /// - Throws: ``SecurityError`` `.invalidPolicy` naming the contradiction, or
    ///   `.unreadableCertificate` when the system's authorities are needed (pinning) and
    ///   cannot be read.
    public init(pinningMode: PinningMode = .none, pinnedCertificates: [TLSCertificate] = [],
                pinnedPublicKeys: [PublicKeyPin] = [], trustedCertificateAuthorities: [TLSCertificate]? = nil,
                allowInvalidCertificates: Bool = false, validatesDomainName: Bool = true,
                clientIdentity: ClientIdentity? = nil, minimumTLSVersion: TLSVersion = .v1_2) throws {
        try Self.validate(pinningMode: pinningMode, pinnedCertificates: pinnedCertificates,
                          pinnedPublicKeys: pinnedPublicKeys, trustedCertificateAuthorities: trustedCertificateAuthorities,
                          allowInvalidCertificates: allowInvalidCertificates, validatesDomainName: validatesDomainName)
        let isDefault = pinningMode == .none && trustedCertificateAuthorities == nil && !allowInvalidCertificates
            && validatesDomainName && clientIdentity == nil && minimumTLSVersion == .v1_2
        guard !isDefault else {
            // `SecurityPolicy()` is `.default`, for libcurl too (no blob, the shared handles).
            self = .default
            return
        }
        let keys = Set(pinnedPublicKeys).union(pinnedCertificates.map(\.publicKeyPin))
        let identity = Self.identity(pinningMode: pinningMode, pinnedCertificates: pinnedCertificates, pinnedPublicKeys: keys,
                                     trustedCertificateAuthorities: trustedCertificateAuthorities,
                                     allowInvalidCertificates: allowInvalidCertificates,
                                     validatesDomainName: validatesDomainName, clientIdentity: clientIdentity,
                                     minimumTLSVersion: minimumTLSVersion)
        let anchors = try Self.anchors(pinningMode: pinningMode, pinnedCertificates: pinnedCertificates,
                                       trustedCertificateAuthorities: trustedCertificateAuthorities, identity: identity)
        storage = Storage(pinningMode: pinningMode, pinnedCertificates: pinnedCertificates, pinnedPublicKeys: keys,
                          trustedCertificateAuthorities: trustedCertificateAuthorities,
                          allowInvalidCertificates: allowInvalidCertificates, validatesDomainName: validatesDomainName,
                          clientIdentity: clientIdentity, minimumTLSVersion: minimumTLSVersion,
                          identity: identity, anchors: anchors)
    }

    /// A policy pinning `pinnedCertificates` in `pinningMode`, trusting the system's
    /// authorities, validating the host name: AFNetworking's `policyWithPinningMode:withPinnedCertificates:`.
    public static func policy(withPinningMode pinningMode: PinningMode, pinnedCertificates: [TLSCertificate]) throws -> SecurityPolicy {
        try SecurityPolicy(pinningMode: pinningMode, pinnedCertificates: pinnedCertificates)
    }

    /// The default policy, built without checks (it has nothing to check).
    private init(unchecked: Void) {
        storage = Storage(pinningMode: .none, pinnedCertificates: [], pinnedPublicKeys: [], trustedCertificateAuthorities: nil,
                          allowInvalidCertificates: false, validatesDomainName: true, clientIdentity: nil,
                          minimumTLSVersion: .v1_2, identity: "default", anchors: nil)
    }

    /// Whether the policy is the default one but, at most, for the authorities it trusts: no
    /// pins, no client certificate, the chain and the host checked, TLS 1.2 at least. Its
    /// options on an easy handle are the anchors alone, which a handle keeps from one
    /// transfer to the next (``EasyHandlePool``).
    var onlyNamesItsAuthorities: Bool {
        storage === Self.default.storage
            || (pinningMode == .none && clientIdentity == nil && !allowInvalidCertificates && validatesDomainName
                && minimumTLSVersion == .v1_2)
    }

    /// The PEM libcurl is given as `CURLOPT_CAINFO_BLOB`: a first line naming ``identity``
    /// (PEM readers skip text outside the blocks), then the anchors. nil for a policy that
    /// pins nothing and trusts the system's authorities, which leaves libcurl's own CA file
    /// (and its CA cache) in place: libcurl's connection match already tells such policies
    /// apart (verification flags, TLS version, client certificate).
    var anchors: Data? { storage.anchors }

    /// Every setting, in one immutable object: a policy is copied into every operation and
    /// every transfer, and a copy is then one retain.
    private let storage: Storage

    private final class Storage: Sendable {
        let pinningMode: PinningMode
        let pinnedCertificates: [TLSCertificate]
        let pinnedPublicKeys: Set<PublicKeyPin>
        let trustedCertificateAuthorities: [TLSCertificate]?
        let allowInvalidCertificates: Bool
        let validatesDomainName: Bool
        let clientIdentity: ClientIdentity?
        let minimumTLSVersion: TLSVersion
        let identity: String
        let anchors: Data?

        init(pinningMode: PinningMode, pinnedCertificates: [TLSCertificate], pinnedPublicKeys: Set<PublicKeyPin>,
             trustedCertificateAuthorities: [TLSCertificate]?, allowInvalidCertificates: Bool, validatesDomainName: Bool,
             clientIdentity: ClientIdentity?, minimumTLSVersion: TLSVersion, identity: String, anchors: Data?) {
            self.pinningMode = pinningMode
            self.pinnedCertificates = pinnedCertificates
            self.pinnedPublicKeys = pinnedPublicKeys
            self.trustedCertificateAuthorities = trustedCertificateAuthorities
            self.allowInvalidCertificates = allowInvalidCertificates
            self.validatesDomainName = validatesDomainName
            self.clientIdentity = clientIdentity
            self.minimumTLSVersion = minimumTLSVersion
            self.identity = identity
            self.anchors = anchors
        }
    }

    public static func == (lhs: SecurityPolicy, rhs: SecurityPolicy) -> Bool {
        lhs.storage === rhs.storage || lhs.identity == rhs.identity
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }

    // MARK: - Checks

    private static func validate(pinningMode: PinningMode, pinnedCertificates: [TLSCertificate], pinnedPublicKeys: [PublicKeyPin],
                                 trustedCertificateAuthorities: [TLSCertificate]?, allowInvalidCertificates: Bool,
                                 validatesDomainName: Bool) throws {
        func refuse(_ detail: String) -> SecurityError { SecurityError(.invalidPolicy(detail: detail)) }
        switch pinningMode {
        case .none:
            guard pinnedCertificates.isEmpty, pinnedPublicKeys.isEmpty else {
                throw refuse("pins are given but the pinning mode is .none: choose .publicKey or .certificate")
            }
            if allowInvalidCertificates, validatesDomainName {
                // AFNetworking refuses this too: a name in a certificate nobody vouches for
                // proves nothing.
                throw refuse("invalid certificates are allowed and the domain name is validated, with no pins: "
                             + "a self-signed certificate can name any host. Pin it, or set validatesDomainName to false")
            }
        case .publicKey:
            guard !pinnedCertificates.isEmpty || !pinnedPublicKeys.isEmpty else {
                throw refuse("public-key pinning with no pinned certificate or public key")
            }
        case .certificate:
            guard !pinnedCertificates.isEmpty else { throw refuse("certificate pinning with no pinned certificate") }
            guard pinnedPublicKeys.isEmpty else {
                throw refuse("public-key pins are given in certificate mode: use .publicKey to pin keys")
            }
            guard trustedCertificateAuthorities == nil else {
                throw refuse("trusted authorities are given in certificate mode, where the pinned certificates are "
                             + "the only anchors: pin the authority's certificate instead")
            }
        }
        if let trustedCertificateAuthorities, trustedCertificateAuthorities.isEmpty {
            throw refuse("the list of trusted certificate authorities is empty (nil trusts the system's)")
        }
    }

    // MARK: - Identity and anchors

    private static func identity(pinningMode: PinningMode, pinnedCertificates: [TLSCertificate], pinnedPublicKeys: Set<PublicKeyPin>,
                                 trustedCertificateAuthorities: [TLSCertificate]?, allowInvalidCertificates: Bool,
                                 validatesDomainName: Bool, clientIdentity: ClientIdentity?, minimumTLSVersion: TLSVersion) -> String {
        var lines = ["mode \(pinningMode)", "invalid \(allowInvalidCertificates)", "domain \(validatesDomainName)",
                     "tls \(minimumTLSVersion.rawValue)"]
        lines += pinnedCertificates.map { "pinned \($0.fingerprint)" }.sorted()
        lines += pinnedPublicKeys.map { "key \($0)" }.sorted()
        lines += trustedCertificateAuthorities.map { $0.map { "ca \($0.fingerprint)" } } ?? ["ca system"]
        if let clientIdentity {
            lines.append("client \(clientIdentity.parsedCertificate.fingerprint) \(clientIdentity.hashValueForIdentity)")
        }
        let digest = SHA256.hash(data: Data(lines.joined(separator: "\n").utf8))
        return digest.lowercaseHex
    }

    private static func anchors(pinningMode: PinningMode, pinnedCertificates: [TLSCertificate],
                                trustedCertificateAuthorities: [TLSCertificate]?, identity: String) throws -> Data? {
        if pinningMode == .none, trustedCertificateAuthorities == nil { return nil }
        var pem = Data("HTTPOperations security policy \(identity)\n".utf8)
        switch (pinningMode, trustedCertificateAuthorities) {
        case (.certificate, _):
            // The pins are the only anchors (``validate`` refuses authorities besides).
            for certificate in pinnedCertificates { pem.append(Data((certificate.pemEncoded + "\n").utf8)) }
        case (_, let authorities?):
            for certificate in authorities { pem.append(Data((certificate.pemEncoded + "\n").utf8)) }
        case (_, nil):
            pem.append(try SystemAuthorities.bundle())
        }
        return pem
    }
}

extension ClientIdentity {
    /// What distinguishes two identities with the same certificate: where the key is, and
    /// the passphrase (never stored in clear in the identity digest).
    fileprivate var hashValueForIdentity: String {
        var text = ""
        switch privateKey {
        case .file(let url): text += "file \(url.path)"
        case .pem(let data): text += "pem \(Data(SHA256.hash(data: data)).base64EncodedString())"
        }
        switch certificate {
        case .file(let url): text += " certfile \(url.path)"
        case .pem: text += " certpem"
        }
        if let passphrase { text += " pass \(Data(SHA256.hash(data: Data(passphrase.utf8))).base64EncodedString())" }
        return text
    }
}
