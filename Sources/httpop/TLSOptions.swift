import ArgumentParser
import Foundation
import HTTPOperations

/// The TLS options `get` and `download` share, in curl's spelling where curl has one.
struct TLSOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Trust the certificate authorities in FILE (PEM or DER) instead of the system's.", valueName: "file"))
    var cacert: String?

    @Option(name: .customLong("pinned-key"),
            help: ArgumentHelp("Pin a public key, as sha256//BASE64 (curl's form). Repeatable; any certificate of the chain may match.",
                               valueName: "pin"))
    var pinnedKeys: [String] = []

    @Option(name: .customLong("pinned-cert"),
            help: ArgumentHelp("Pin a certificate (PEM or DER file, or a folder of them); pinned certificates are the only anchors. Repeatable.",
                               valueName: "file"))
    var pinnedCertificates: [String] = []

    @Flag(name: [.customShort("k"), .customLong("insecure")],
          help: "Accept certificates no authority vouches for. Pins are still checked, and so is the host name when there are pins.")
    var insecure = false

    @Option(help: ArgumentHelp("Client certificate (PEM) for servers that ask for one; needs --key.", valueName: "file"))
    var cert: String?

    @Option(help: ArgumentHelp("The client certificate's private key (PEM).", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("The passphrase of an encrypted --key.", valueName: "passphrase"))
    var pass: String?

    func validate() throws {
        if !pinnedKeys.isEmpty, !pinnedCertificates.isEmpty {
            throw ValidationError("use --pinned-key or --pinned-cert, not both")
        }
        if (cert == nil) != (key == nil) {
            throw ValidationError("--cert and --key go together")
        }
        if pass != nil, key == nil {
            throw ValidationError("--pass needs --key")
        }
    }

    /// Whether any option was given (else the default policy applies).
    var isDefault: Bool {
        cacert == nil && pinnedKeys.isEmpty && pinnedCertificates.isEmpty && !insecure && cert == nil
    }

    /// The policy these options describe.
    ///
    /// - Throws: ``SecurityError`` for a file that cannot be read or a pin that is malformed.
    func securityPolicy() throws -> SecurityPolicy {
        guard !isDefault else { return .default }
        let keys = try pinnedKeys.map { try PublicKeyPin($0) }
        let certificates = try pinnedCertificates.flatMap { try TLSCertificate.certificates(contentsOf: URL(fileURLWithPath: $0)) }
        let mode: SecurityPolicy.PinningMode = !keys.isEmpty ? .publicKey : !certificates.isEmpty ? .certificate : .none
        let identity = try cert.map { cert in
            try ClientIdentity(certificateFile: URL(fileURLWithPath: cert), privateKeyFile: URL(fileURLWithPath: key!), passphrase: pass)
        }
        return try SecurityPolicy(
            pinningMode: mode, pinnedCertificates: certificates, pinnedPublicKeys: keys,
            trustedCertificateAuthorities: try cacert.map { try TLSCertificate.certificates(contentsOf: URL(fileURLWithPath: $0)) },
            allowInvalidCertificates: insecure,
            // As curl -k: no host check without pins (a name nobody vouches for proves nothing).
            validatesDomainName: !insecure || mode != .none,
            clientIdentity: identity)
    }
}
