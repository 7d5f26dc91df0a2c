import Foundation

/// Everything needed to continue an interrupted download in another operation, or in another
/// process after a restart: save it, then hand it to ``URLConnectionOperation/init(resumeData:)``.
///
/// The offset it records is advisory: when the download goes to a file, the file's size on
/// disk is what is resumed from, so a crash between a write and the next save loses nothing.
/// Credentials (`Authorization`, `Cookie`, `Proxy-Authorization`, a `user:password@` in the
/// URL, and the operation's ``URLConnectionOperation/sensitiveHeaderFields``) are never
/// stored; set them again on the new operation. Sidecar files are written with mode 0600.
public struct ResumeData: Codable, Sendable, Equatable {
    /// The format this version of the library writes and reads.
    public static let currentVersion = 1

    /// The format version of this value.
    public var version: Int
    /// The resource.
    public var url: URL
    /// The method, normally GET.
    public var method: String
    /// The request's header fields, except credentials and range fields.
    public var headers: [String: String]
    /// What identifies the version of the resource the held bytes belong to; nil when the
    /// server offered none (then only the `Content-Range` answer is checked).
    public var validator: ResumeValidator?
    /// Bytes held when this value was made.
    public var offset: Int64
    /// The complete length, when the server announced it.
    public var expectedLength: Int64?
    /// The file the body is written to.
    public var destination: URL?

    /// Header fields never written to resume data.
    static let excludedHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization", "range", "if-range"]

    /// Creates resume data. A user name and password in `url` are left out, as are the
    /// credential header fields (`Authorization`, `Cookie`, `Proxy-Authorization`).
    public init(url: URL, method: String = "GET", headers: [String: String] = [:], validator: ResumeValidator?,
                offset: Int64, expectedLength: Int64?, destination: URL?) {
        self.version = Self.currentVersion
        self.url = Self.withoutUserInfo(url)
        self.method = method
        self.headers = headers.filter { !Self.excludedHeaders.contains($0.key.lowercased()) }
        self.validator = validator
        self.offset = offset
        self.expectedLength = expectedLength
        self.destination = destination
    }

    /// Reads resume data saved by ``encoded()``.
    ///
    /// - Throws: `DecodingError` for bytes that are not resume data, or
    ///   ``UnsupportedResumeDataVersion`` for a format this version cannot read.
    public init(from data: Data) throws {
        let decoded = try JSONDecoder().decode(ResumeData.self, from: data)
        guard decoded.version == Self.currentVersion else {
            throw UnsupportedResumeDataVersion(version: decoded.version)
        }
        self = decoded
    }

    /// The value as JSON, to save.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// The request that fetches the resource again (range fields are added when resuming).
    public var request: URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// `url` without `user:password@`.
    static func withoutUserInfo(_ url: URL) -> URL {
        guard url.user != nil || url.password != nil,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.user = nil
        components.password = nil
        return components.url ?? url
    }

    /// Where resume data for a download to `file` is kept: beside it, as
    /// `<file>.httpop-resume`.
    public static func sidecarURL(for file: URL) -> URL {
        file.deletingLastPathComponent().appendingPathComponent(file.lastPathComponent + ".httpop-resume")
    }
}

/// Resume data written by a version of the library whose format this one does not read.
public struct UnsupportedResumeDataVersion: Error, Sendable, CustomStringConvertible {
    /// The version found.
    public let version: Int

    public var description: String {
        "Resume data version \(version) is not supported (this library reads version \(ResumeData.currentVersion))."
    }
}
