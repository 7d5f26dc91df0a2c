import CCurl
import Foundation

/// Process-wide facts about the libcurl loaded at run time: initialised once, its version,
/// whether it is recent enough, and where its CA bundle is.
enum Libcurl {
    /// The oldest libcurl this library accepts: 7.85.0 has the connection-reuse fixes for TLS
    /// settings (CVE-2022-27782, 7.84.0: a connection made under one CA, pin or client
    /// certificate could serve a request under another) and `CURLOPT_PROTOCOLS_STR`.
    static let minimumVersion = (major: 7, minor: 85, patch: 0)

    /// The version, as libcurl reports it ("7.88.1").
    static var version: String { facts.version }

    /// The version as one number, `0xXXYYZZ` (`LIBCURL_VERSION_NUM`): 0x075801 for 7.88.1.
    static var versionNumber: Int { facts.versionNumber }

    /// A ``SecurityError`` `.unsupportedLibcurl` when the libcurl loaded is older than
    /// ``minimumVersion``; nil when it is recent enough. Checked when the network thread
    /// starts; every transfer fails with it rather than run on an unsafe libcurl.
    static let versionProblem: SecurityError? = facts.problem

    /// The CA bundle libcurl trusts by default (`CURLINFO_CAINFO`), nil when it was built
    /// without one.
    static var defaultCAFile: String? { facts.caFile }

    /// Calls `curl_global_init` once for the process (it is not thread-safe itself).
    static func initialize() { _ = facts }

    /// The refusal for a libcurl of `versionNumber` (`0xXXYYZZ`, as `LIBCURL_VERSION_NUM`),
    /// nil when it is at least ``minimumVersion``.
    static func problem(versionNumber: Int, version: String) -> SecurityError? {
        let required = minimumVersion.major << 16 | minimumVersion.minor << 8 | minimumVersion.patch
        guard versionNumber < required else { return nil }
        return SecurityError(.unsupportedLibcurl(
            found: version, required: "\(minimumVersion.major).\(minimumVersion.minor).\(minimumVersion.patch)"))
    }

    private struct Facts: Sendable {
        let version: String
        let versionNumber: Int
        let problem: SecurityError?
        let caFile: String?
    }

    private static let facts: Facts = {
        curl_global_init(Int(CURL_GLOBAL_ALL))
        // Only the first fields are read, which every libcurl fills (CURLVERSION_NOW is a
        // macro Swift does not import).
        let info = curl_version_info(CURLVERSION_FIRST)!.pointee
        let number = Int(info.version_num)
        let version = String(cString: info.version)
        let refusal = problem(versionNumber: number, version: version)
        var caFile: String?
        if let easy = curl_easy_init() {
            var path: UnsafeMutablePointer<CChar>?
            if ccurl_easy_getinfo_string(easy, CURLINFO_CAINFO, &path) == CURLE_OK, let path {
                caFile = String(cString: path)
            }
            curl_easy_cleanup(easy)
        }
        return Facts(version: version, versionNumber: number, problem: refusal, caFile: caFile)
    }()
}
