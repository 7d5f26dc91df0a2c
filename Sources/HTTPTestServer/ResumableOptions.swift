import Foundation

/// How the test server's resumable endpoint behaves: which validators it offers and which
/// faults it injects. Every option defaults to a well-behaved server.
public struct ResumableOptions: Sendable, Equatable {
    /// The entity tag the endpoint sends.
    public enum EntityTag: String, Sendable {
        case strong, weak, none
    }

    /// Separates the endpoint's per-resource counters between tests.
    public var key: String
    public var etag: EntityTag = .strong
    /// Send `Last-Modified`.
    public var lastModified = false
    /// Answer every request with the whole body (200), as servers without range support do.
    public var ignoreRange = false
    /// Every request sees a new version of the resource: a new ETag and other bytes.
    public var changeEachRequest = false
    /// Answer ranges with a `Content-Range` that starts 100 bytes later than asked.
    public var wrongContentRangeStart = false
    /// Omit `Content-Range` from 206 answers.
    public var omitContentRange = false
    /// Close the connection after this many body bytes of a response...
    public var dropAfter: Int?
    /// ...for this many responses; later ones are whole.
    public var drops = 1
    /// Close with a TCP reset (SO_LINGER 0) instead of FIN.
    public var resetOnDrop = false
    /// Write at most this many bytes, then wait `chunkDelayMilliseconds`, to drip slowly.
    public var chunkSize: Int?
    public var chunkDelayMilliseconds = 0
    /// Require Basic credentials `user:password`: without them every request gets a 401
    /// challenge (with a body), as a protected file server answers.
    public var basicAuth: String?
    /// Answer a range with at most this many bytes (`Content-Range: bytes a-(a+cap-1)/size`),
    /// as CDNs that cap ranges do: legal, and short of the rest.
    public var rangeCap: Int?
    /// Answer every range request with this status (a 4xx or 5xx) and a small body.
    public var rangeStatus: Int?
    /// Answer a range with a 206 whatever `If-Range` says, as servers that ignore it do.
    public var ignoreIfRange = false

    /// Options for a well-behaved resource; `key` keeps tests apart.
    public init(key: String = UUID().uuidString) {
        self.key = key
    }

    var query: String {
        var items = ["key=\(key)", "etag=\(etag.rawValue)"]
        if lastModified { items.append("lm=1") }
        if ignoreRange { items.append("ignoreRange=1") }
        if changeEachRequest { items.append("change=1") }
        if wrongContentRangeStart { items.append("badStart=1") }
        if omitContentRange { items.append("noContentRange=1") }
        if let dropAfter { items.append("dropAfter=\(dropAfter)&drops=\(drops)") }
        if resetOnDrop { items.append("rst=1") }
        if let chunkSize { items.append("chunk=\(chunkSize)&delay=\(chunkDelayMilliseconds)") }
        if let rangeCap { items.append("cap=\(rangeCap)") }
        if let rangeStatus { items.append("rangeStatus=\(rangeStatus)") }
        if ignoreIfRange { items.append("ignoreIfRange=1") }
        if let basicAuth { items.append("auth=\(basicAuth.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? basicAuth)") }
        return items.joined(separator: "&")
    }

    /// The bytes of version `version` of a resource, from `offset`: the pattern, shifted so
    /// that versions differ.
    public static func content(version: Int, offset: Int = 0, count: Int) -> Data {
        TestServer.pattern(offset: offset + version * 7, count: count)
    }
}
