import Foundation

/// The system's certificate authorities, as the PEM bundle libcurl trusts by default. A
/// pinning policy that trusts the system's authorities hands them to libcurl in memory, with
/// its identity on top (see ``SecurityPolicy``), so the bundle is read once per process.
enum SystemAuthorities {
    private static let cached: Result<Data, SecurityError> = {
        let path = Libcurl.defaultCAFile ?? "/etc/ssl/certs/ca-certificates.crt"
        do {
            return .success(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            return .failure(SecurityError(.unreadableCertificate(
                source: path, detail: "the system's CA bundle cannot be read (\(error.localizedDescription))")))
        }
    }()

    /// The bundle's bytes.
    ///
    /// - Throws: ``SecurityError`` `.unreadableCertificate` naming the file.
    static func bundle() throws -> Data {
        try cached.get()
    }
}
