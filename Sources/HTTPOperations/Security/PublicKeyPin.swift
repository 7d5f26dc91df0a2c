import Crypto
import Foundation

/// The SHA-256 of a DER-encoded SubjectPublicKeyInfo: what public-key pinning compares, in
/// the form curl and HPKP use (`sha256//BASE64`).
///
/// A pin survives certificate renewal as long as the key is kept, which is why public-key
/// pinning is the mode to prefer (Docs/Security.md, "Rotating pins").
public struct PublicKeyPin: Sendable, Hashable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256.
    public let sha256: Data

    /// A pin from the 32 bytes of a SHA-256.
    ///
    /// - Throws: ``SecurityError`` `.invalidPolicy` when `sha256` is not 32 bytes long.
    public init(sha256: Data) throws {
        guard sha256.count == SHA256.byteCount else {
            throw SecurityError(.invalidPolicy(detail: "a public-key pin is a SHA-256 (32 bytes), not \(sha256.count) bytes"))
        }
        self.sha256 = sha256
    }

    /// A pin in curl's form, `sha256//` followed by the base64 of the SHA-256 (the form
    /// `--pinned-key` takes; `openssl x509 -pubkey | openssl pkey -pubin -outform der |
    /// openssl dgst -sha256 -binary | base64` prints the base64).
    ///
    /// - Throws: ``SecurityError`` `.invalidPolicy` when `text` is not of that form.
    public init(_ text: String) throws {
        let prefix = "sha256//"
        guard text.hasPrefix(prefix), let digest = Data(base64Encoded: String(text.dropFirst(prefix.count))),
              digest.count == SHA256.byteCount else {
            throw SecurityError(.invalidPolicy(
                detail: "'\(text)' is not a public-key pin: expected sha256// and the base64 of 32 bytes"))
        }
        self.sha256 = digest
    }

    /// The pin of a DER-encoded SubjectPublicKeyInfo.
    init(subjectPublicKeyInfo der: some DataProtocol) {
        self.sha256 = Data(SHA256.hash(data: der))
    }

    /// `sha256//BASE64`.
    public var description: String { "sha256//" + sha256.base64EncodedString() }
}
