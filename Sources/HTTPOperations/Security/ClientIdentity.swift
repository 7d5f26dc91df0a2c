import Foundation

/// A client certificate and its private key, shown to servers that ask for one (mutual
/// TLS). libcurl reads them: `CURLOPT_SSLCERT`/`CURLOPT_SSLKEY` for files,
/// `CURLOPT_SSLCERT_BLOB`/`CURLOPT_SSLKEY_BLOB` for bytes in memory, `CURLOPT_KEYPASSWD` for an
/// encrypted key.
public struct ClientIdentity: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
                             CustomReflectable {
    /// Where a PEM document comes from.
    public enum Source: Sendable, Hashable {
        /// A PEM file, read by libcurl on each new connection (a renewed file is picked up).
        case file(URL)
        /// PEM bytes in memory.
        case pem(Data)
    }

    /// The client certificate (PEM), optionally followed by its intermediates.
    public let certificate: Source
    /// The private key (PEM; PKCS#8, PKCS#1 or SEC1, encrypted or not).
    public let privateKey: Source
    /// The passphrase of an encrypted key.
    public let passphrase: String?
    /// The certificate, parsed when the identity was made.
    public let parsedCertificate: TLSCertificate

    /// An identity from a certificate and a key.
    ///
    /// - Throws: ``SecurityError`` `.unreadableCertificate` when the certificate cannot be
    ///   read or parsed, or the key file cannot be read. (A wrong passphrase is found by
    ///   libcurl when it connects: `URLError(.clientCertificateRejected)`.)
    public init(certificate: Source, privateKey: Source, passphrase: String? = nil) throws {
        self.certificate = certificate
        self.privateKey = privateKey
        self.passphrase = passphrase
        let certificateBytes = try Self.bytes(of: certificate)
        guard let first = try TLSCertificate.certificates(in: certificateBytes, source: Self.name(of: certificate)).first else {
            throw SecurityError(.unreadableCertificate(source: Self.name(of: certificate), detail: "no certificate"))
        }
        self.parsedCertificate = first
        let keyText = String(decoding: try Self.bytes(of: privateKey), as: UTF8.self)
        guard keyText.contains("PRIVATE KEY-----") else {
            throw SecurityError(.unreadableCertificate(source: Self.name(of: privateKey), detail: "no PEM private key"))
        }
        // OpenSSL would ask for the passphrase on the terminal, on the network thread.
        if passphrase == nil, Self.isEncrypted(keyText) {
            throw SecurityError(.unreadableCertificate(source: Self.name(of: privateKey),
                                                       detail: "the private key is encrypted and no passphrase was given"))
        }
    }

    /// Whether a PEM key is encrypted: PKCS#8's `ENCRYPTED PRIVATE KEY`, or a traditional
    /// key's `Proc-Type: 4,ENCRYPTED` header.
    static func isEncrypted(_ pem: String) -> Bool {
        pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || pem.contains("Proc-Type: 4,ENCRYPTED")
    }

    /// An identity from PEM files.
    public init(certificateFile: URL, privateKeyFile: URL, passphrase: String? = nil) throws {
        try self.init(certificate: .file(certificateFile), privateKey: .file(privateKeyFile), passphrase: passphrase)
    }

    /// The certificate's subject and where the key comes from; never the passphrase, nor the
    /// key's bytes.
    public var description: String {
        "ClientIdentity(certificate: \(parsedCertificate.subject), privateKey: \(Self.name(of: privateKey)), "
            + "passphrase: \(passphrase == nil ? "none" : "<redacted>"))"
    }

    /// The same as ``description``: what `debugPrint` shows.
    public var debugDescription: String { description }

    /// What `dump` and reflection show: the passphrase redacted.
    public var customMirror: Mirror {
        Mirror(self, children: ["certificate": certificate, "privateKey": privateKey,
                                "passphrase": passphrase == nil ? "none" : "<redacted>",
                                "parsedCertificate": parsedCertificate], displayStyle: .struct)
    }

    private static func bytes(of source: Source) throws -> Data {
        switch source {
        case .file(let url): try TLSCertificate.readFile(url)
        case .pem(let data): data
        }
    }

    private static func name(of source: Source) -> String {
        switch source {
        case .file(let url): url.path
        case .pem: "(PEM data)"
        }
    }
}
