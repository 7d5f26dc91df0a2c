import Foundation

/// Everything needed to continue an interrupted download in another operation, or in another
/// process after a restart: save it, then hand it to ``URLConnectionOperation/init(resumeData:)``.
///
/// The offset it records is advisory: when the download goes to a file, the file's size on
/// disk is what is resumed from, so a crash between a write and the next save loses nothing.
/// Credentials (`Authorization`, `Cookie`, `Proxy-Authorization`, a `user:password@` in the
/// URL, and the operation's ``OperationConfiguration/sensitiveHeaderFields``) are never
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
    /// The `ETag` (strong or weak) the server sent with the version whose bytes are held; nil
    /// when it sent none. Compared with every 206's, whichever validator `If-Range` carried.
    /// Absent from resume data saved before this field existed: then the validator's.
    public var entityTag: String?
    /// The `Last-Modified` date the server sent with that version; compared likewise.
    public var lastModified: String?

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
        switch validator {
        case .entityTag(let tag)?: self.entityTag = tag
        case .lastModified(let date)?: self.lastModified = date
        case nil: break
        }
    }

    /// Reads resume data saved by ``encoded()``.
    ///
    /// - Throws: `DecodingError` for bytes that are not resume data, or
    ///   ``ResumeError`` `.unsupportedResumeDataVersion` for a format this version cannot read.
    public init(from data: Data) throws {
        let decoded = try JSONDecoder().decode(ResumeData.self, from: data)
        guard decoded.version == Self.currentVersion else {
            throw ResumeError(.unsupportedResumeDataVersion(found: decoded.version, readable: Self.currentVersion))
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

    /// Whether this resume data may continue a download of `url`: the same URL (user
    /// information aside); or, for a pre-signed URL whose query changes each time it is made,
    /// the same scheme, host, port and path when the bytes held are named by a strong ETag and
    /// a known length, which `If-Range` and every 206 are checked against. Without them the
    /// query may name another resource, which nothing could tell apart.
    public func continues(_ url: URL) -> Bool {
        let requested = Self.withoutUserInfo(url)
        if requested == self.url { return true }
        guard case .entityTag? = validator, expectedLength != nil,
              var saved = URLComponents(url: self.url, resolvingAgainstBaseURL: false),
              var asked = URLComponents(url: requested, resolvingAgainstBaseURL: false) else { return false }
        saved.query = nil
        asked.query = nil
        saved.fragment = nil
        asked.fragment = nil
        return saved.scheme?.lowercased() == asked.scheme?.lowercased() && saved.host?.lowercased() == asked.host?.lowercased()
            && saved.port == asked.port && saved.percentEncodedPath == asked.percentEncodedPath
    }

    /// Where resume data for a download to `file` is kept: beside it, as
    /// `<file>.httpop-resume`.
    public static func sidecarURL(for file: URL) -> URL {
        file.deletingLastPathComponent().appendingPathComponent(file.lastPathComponent + ".httpop-resume")
    }
}
