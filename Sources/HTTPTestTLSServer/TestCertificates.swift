import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate and its private key, in PEM.
public struct TestIdentity: Sendable {
    /// The certificate.
    public let certificatePEM: String
    /// Its P-256 private key (PKCS#8).
    public let privateKeyPEM: String
    /// The certificate's DER encoding.
    public let certificateDER: Data
    /// The SHA-256 of its DER-encoded SubjectPublicKeyInfo, as `sha256//BASE64`.
    public let publicKeyPin: String
}

/// Certificates made in memory for the tests, with swift-certificates: a root CA, an
/// intermediate CA under it, server leaves signed by the intermediate (good, expired, for the
/// wrong host), a self-signed leaf, and client certificates signed by the root. Made once per
/// process; nothing touches the disk unless a test writes a PEM out.
public struct TestCertificates: Sendable {
    /// The root certificate authority.
    public let root: TestIdentity
    /// The intermediate authority, signed by the root; it signs the server leaves.
    public let intermediate: TestIdentity
    /// A server leaf for `localhost` and `127.0.0.1`, valid now.
    public let leaf: TestIdentity
    /// A server leaf for `localhost` and `127.0.0.1` that expired yesterday.
    public let expiredLeaf: TestIdentity
    /// A server leaf for `wrong.example` only.
    public let wrongHostLeaf: TestIdentity
    /// A self-signed leaf for `localhost` and `127.0.0.1`, signed by no authority.
    public let selfSignedLeaf: TestIdentity
    /// A second self-signed leaf for the same names, with another key: a server that is not
    /// the one pinned.
    public let impostorLeaf: TestIdentity
    /// A leaf for the same names that the intermediate signed too, with a key of its own: a
    /// mis-issued certificate, the threat pinning exists for.
    public let misissuedLeaf: TestIdentity
    /// A leaf for the same names whose issuer is ``misissuedLeaf`` (an end entity, no
    /// authority), signed with its key: a chain that only signatures would link.
    public let leafSignedByALeaf: TestIdentity
    /// A leaf for the same names naming the intermediate as its issuer, signed by another key:
    /// a chain that only names would link.
    public let forgedLeaf: TestIdentity
    /// A client certificate signed by the root.
    public let client: TestIdentity
    /// A client certificate signed by nobody the server trusts.
    public let untrustedClient: TestIdentity

    /// The set every test shares (generating keys and signing takes a few milliseconds).
    public static let shared: TestCertificates = {
        do {
            return try TestCertificates()
        } catch {
            fatalError("cannot make the test certificates: \(error)")
        }
    }()

    private init() throws {
        let now = Date()
        let day: TimeInterval = 86_400
        let rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("HTTPOperations Test Root CA") }
        root = try Self.make(subject: rootName, key: rootKey, issuer: rootName, issuerKey: rootKey,
                             validity: (now - day, now + 365 * day), authority: true, names: [], usage: nil)
        let intermediateKey = P256.Signing.PrivateKey()
        let intermediateName = try DistinguishedName { CommonName("HTTPOperations Test Intermediate CA") }
        intermediate = try Self.make(subject: intermediateName, key: intermediateKey, issuer: rootName, issuerKey: rootKey,
                                     validity: (now - day, now + 365 * day), authority: true, names: [], usage: nil)
        let loopback: [GeneralName] = [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]
        func serverLeaf(_ commonName: String, names: [GeneralName], validity: (Date, Date)) throws -> TestIdentity {
            try Self.make(subject: DistinguishedName { CommonName(commonName) }, key: P256.Signing.PrivateKey(),
                          issuer: intermediateName, issuerKey: intermediateKey, validity: validity, authority: false,
                          names: names, usage: .serverAuth)
        }
        leaf = try serverLeaf("localhost", names: loopback, validity: (now - day, now + 30 * day))
        expiredLeaf = try serverLeaf("expired", names: loopback, validity: (now - 30 * day, now - day))
        wrongHostLeaf = try serverLeaf("wrong.example", names: [.dnsName("wrong.example")], validity: (now - day, now + 30 * day))
        let misissuedKey = P256.Signing.PrivateKey()
        let misissuedName = try DistinguishedName { CommonName("localhost (mis-issued)") }
        misissuedLeaf = try Self.make(subject: misissuedName, key: misissuedKey, issuer: intermediateName, issuerKey: intermediateKey,
                                      validity: (now - day, now + 30 * day), authority: false, names: loopback, usage: .serverAuth)
        leafSignedByALeaf = try Self.make(subject: DistinguishedName { CommonName("localhost (signed by a leaf)") },
                                          key: P256.Signing.PrivateKey(), issuer: misissuedName, issuerKey: misissuedKey,
                                          validity: (now - day, now + 30 * day), authority: false, names: loopback, usage: .serverAuth)
        forgedLeaf = try Self.make(subject: DistinguishedName { CommonName("localhost (forged)") }, key: P256.Signing.PrivateKey(),
                                   issuer: intermediateName, issuerKey: P256.Signing.PrivateKey(),
                                   validity: (now - day, now + 30 * day), authority: false, names: loopback, usage: .serverAuth)
        func selfSigned(_ commonName: String) throws -> TestIdentity {
            let key = P256.Signing.PrivateKey()
            let name = try DistinguishedName { CommonName(commonName) }
            return try Self.make(subject: name, key: key, issuer: name, issuerKey: key, validity: (now - day, now + 30 * day),
                                 authority: false, names: loopback, usage: .serverAuth)
        }
        selfSignedLeaf = try selfSigned("self-signed localhost")
        impostorLeaf = try selfSigned("impostor localhost")
        client = try Self.make(subject: DistinguishedName { CommonName("client") }, key: P256.Signing.PrivateKey(),
                               issuer: rootName, issuerKey: rootKey, validity: (now - day, now + 30 * day), authority: false,
                               names: [], usage: .clientAuth)
        let strangerKey = P256.Signing.PrivateKey()
        let strangerName = try DistinguishedName { CommonName("stranger") }
        untrustedClient = try Self.make(subject: strangerName, key: strangerKey, issuer: strangerName, issuerKey: strangerKey,
                                        validity: (now - day, now + 30 * day), authority: false, names: [], usage: .clientAuth)
    }

    private static func make(subject: DistinguishedName, key: P256.Signing.PrivateKey, issuer: DistinguishedName,
                             issuerKey: P256.Signing.PrivateKey, validity: (Date, Date), authority: Bool,
                             names: [GeneralName], usage: ExtendedKeyUsage.Usage?) throws -> TestIdentity {
        let extensions = try Certificate.Extensions {
            Critical(authority ? BasicConstraints.isCertificateAuthority(maxPathLength: nil) : .notCertificateAuthority)
            if authority {
                KeyUsage(keyCertSign: true, cRLSign: true)
            } else {
                KeyUsage(digitalSignature: true)
            }
            if !names.isEmpty {
                SubjectAlternativeNames(names)
            }
            if let usage {
                try ExtendedKeyUsage([usage])
            }
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: validity.0, notValidAfter: validity.1, issuer: issuer, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions, issuerPrivateKey: Certificate.PrivateKey(issuerKey))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let der = Data(serializer.serializedBytes)
        var keySerializer = DER.Serializer()
        try keySerializer.serialize(certificate.publicKey)
        let pin = "sha256//" + Data(SHA256.hash(data: keySerializer.serializedBytes)).base64EncodedString()
        return TestIdentity(certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation,
                            certificateDER: der, publicKeyPin: pin)
    }
}
