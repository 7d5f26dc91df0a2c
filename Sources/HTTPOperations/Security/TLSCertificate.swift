import Crypto
import Foundation
import SwiftASN1
import X509

/// An X.509 certificate, parsed: a pin, a trusted authority, or one of the certificates a
/// server showed. Parsing and encoding are swift-certificates' (no hand-written DER).
public struct TLSCertificate: Sendable, Hashable, CustomStringConvertible {
    /// The certificate's DER encoding.
    public let derEncoded: Data
    /// The pin of its public key: the SHA-256 of its DER-encoded SubjectPublicKeyInfo.
    public let publicKeyPin: PublicKeyPin
    /// Its subject, as a distinguished name (`CN=example.com,O=...`).
    public let subject: String
    /// The SHA-256 of the whole certificate, as `sha256//BASE64`: what certificate-mode pins
    /// are named by in errors, and what a server-trust block's approvals are keyed by. Hashed
    /// once, when parsed: a pinned connection's path is parsed once while it is recent
    /// (`VerifiedPathCache`), and its approval is looked up on every request.
    public let fingerprint: String

    /// Parses one DER-encoded certificate.
    ///
    /// - Throws: ``SecurityError`` `.unreadableCertificate` when `der` is not one.
    public init(derEncoded der: Data) throws {
        do {
            try self.init(Certificate(derEncoded: Array(der)), der: der)
        } catch let error as SecurityError {
            throw error
        } catch {
            throw SecurityError(.unreadableCertificate(source: "(DER data)", detail: "\(error)"))
        }
    }

    private init(_ certificate: Certificate, der: Data) throws {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate.publicKey)
        self.derEncoded = der
        self.publicKeyPin = PublicKeyPin(subjectPublicKeyInfo: serializer.serializedBytes)
        self.subject = certificate.subject.description
        self.fingerprint = "sha256//" + Data(SHA256.hash(data: der)).base64EncodedString()
    }

    /// The certificate in PEM.
    public var pemEncoded: String {
        PEMDocument(type: "CERTIFICATE", derBytes: Array(derEncoded)).pemString
    }

    /// The subject and the fingerprint.
    public var description: String { "\(subject) (\(fingerprint))" }

    // MARK: - Loading

    /// Every certificate in `data`: one or more PEM blocks (`-----BEGIN CERTIFICATE-----`),
    /// or a single DER certificate.
    ///
    /// - Parameters:
    ///   - data: PEM or DER bytes.
    ///   - source: Names the data in errors (a file name).
    /// - Throws: ``SecurityError`` `.unreadableCertificate` when nothing in `data` parses.
    public static func certificates(in data: Data, source: String = "(data)") throws -> [TLSCertificate] {
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ") {
            do {
                let blocks = try PEMDocument.parseMultiple(pemString: text).filter { $0.discriminator == "CERTIFICATE" }
                guard !blocks.isEmpty else {
                    throw SecurityError(.unreadableCertificate(source: source, detail: "no CERTIFICATE block"))
                }
                return try blocks.map { block in
                    try TLSCertificate(Certificate(derEncoded: block.derBytes), der: Data(block.derBytes))
                }
            } catch let error as SecurityError {
                throw error
            } catch {
                throw SecurityError(.unreadableCertificate(source: source, detail: "\(error)"))
            }
        }
        do {
            return [try TLSCertificate(Certificate(derEncoded: Array(data)), der: data)]
        } catch {
            throw SecurityError(.unreadableCertificate(source: source, detail: "neither PEM nor a DER certificate: \(error)"))
        }
    }

    /// Every certificate in the file at `url` (PEM, one or more; or DER), or, when `url` is a
    /// folder, in each of its files named `*.pem`, `*.crt`, `*.cer` or `*.der`, in name order.
    ///
    /// - Throws: ``SecurityError`` `.unreadableCertificate` naming the file that cannot be
    ///   read or parsed, or a folder with no certificate in it.
    public static func certificates(contentsOf url: URL) throws -> [TLSCertificate] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else {
            throw SecurityError(.unreadableCertificate(source: url.path, detail: "no such file"))
        }
        guard isFolder.boolValue else { return try certificates(in: readFile(url), source: url.path) }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        let files = names.sorted().filter { ["pem", "crt", "cer", "der"].contains(($0 as NSString).pathExtension.lowercased()) }
        let found = try files.flatMap { name in
            let file = url.appendingPathComponent(name)
            return try certificates(in: readFile(file), source: file.path)
        }
        guard !found.isEmpty else {
            throw SecurityError(.unreadableCertificate(source: url.path, detail: "no *.pem, *.crt, *.cer or *.der file in the folder"))
        }
        return found
    }

    /// The bytes of `url`, or a typed error naming it.
    static func readFile(_ url: URL) throws -> Data {
        do {
            return try Data(contentsOf: url)
        } catch {
            throw SecurityError(.unreadableCertificate(source: url.path, detail: error.localizedDescription))
        }
    }
}
