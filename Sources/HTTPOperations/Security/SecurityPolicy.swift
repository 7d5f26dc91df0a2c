import Foundation

/// How an operation decides whether to trust a server's TLS certificate.
///
/// Each setting maps to a libcurl option: what to trust (`CURLOPT_CAINFO`), whether to
/// verify the chain at all (`CURLOPT_SSL_VERIFYPEER`), and whether the certificate must name
/// the host (`CURLOPT_SSL_VERIFYHOST`). Certificate and public-key pinning are not offered
/// yet. A certificate that is refused fails the operation with
/// `URLError(.serverCertificateUntrusted)`.
public struct SecurityPolicy: Sendable, Equatable {
    /// Trust the system's certificate authorities, verify the chain and the host name.
    public static let `default` = SecurityPolicy()

    /// A PEM file of certificate authorities to trust instead of the system's: for a private
    /// CA. nil trusts the system's.
    public var trustedCertificateAuthorities: URL?

    /// Accept any certificate, even expired, self-signed or for another host. For tests and
    /// development only: it gives up everything TLS authenticates. Default false.
    public var allowInvalidCertificates = false

    /// Require the certificate to name the host the URL names. Default true.
    public var validatesDomainName = true

    /// Creates a policy.
    public init(trustedCertificateAuthorities: URL? = nil, allowInvalidCertificates: Bool = false, validatesDomainName: Bool = true) {
        self.trustedCertificateAuthorities = trustedCertificateAuthorities
        self.allowInvalidCertificates = allowInvalidCertificates
        self.validatesDomainName = validatesDomainName
    }
}
