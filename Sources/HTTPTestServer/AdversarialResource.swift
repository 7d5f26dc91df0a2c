import Foundation

// MARK: - The resource and its versions

/// One version of an ``AdversarialResource``: its bytes (derived from `contentKey` and the
/// offset, so no two contents agree at any offset but by chance), its length and the
/// validators a response for it carries.
///
/// Two versions with the same `contentKey` hold the same bytes where both have them: one is
/// the other grown or cut (a log file that grows under an unchanged `ETag`). Every other
/// change of content gives a new key, and the server makes sure that a client can tell the
/// new version from every earlier one by what a `206` shows it: the `ETag`, the
/// `Last-Modified` date or the complete length (see ``AdversarialResumeServer``).
public struct AdversarialVersion: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Where the bytes come from.
    public let contentKey: UInt64
    /// The complete length.
    public let length: Int
    /// The `ETag` sent with it (strong `"…"` or weak `W/"…"`), if any.
    public let entityTag: String?
    /// The `Last-Modified` date sent with it, if any.
    public let lastModified: String?

    public init(contentKey: UInt64, length: Int, entityTag: String?, lastModified: String?) {
        self.contentKey = contentKey
        self.length = length
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// The whole version.
    public var content: [UInt8] { Self.bytes(key: contentKey, offset: 0, count: length) }

    /// `count` bytes of the content named `key`, from `offset`: SplitMix64 of the key and
    /// each 8-byte block, so any byte of another content differs with probability 255/256.
    public static func bytes(key: UInt64, offset: Int, count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        let firstBlock = offset >> 3
        let lastBlock = (offset + count - 1) >> 3
        var words = [UInt64](repeating: 0, count: lastBlock - firstBlock + 1)
        for index in words.indices {
            words[index] = mix(key ^ (UInt64(firstBlock + index) &* 0xD1B5_4A32_D192_ED03)).littleEndian
        }
        return words.withUnsafeBytes { raw in
            Array(raw[(offset & 7)..<((offset & 7) + count)])
        }
    }

    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public var description: String {
        "key \(String(contentKey, radix: 16)), \(length) B, ETag \(entityTag ?? "-"), Last-Modified \(lastModified ?? "-")"
    }
}

/// A resource an ``AdversarialResumeServer`` serves at `/r/<key>`, with the script of what it
/// does to each request.
public struct AdversarialResource: Sendable, Codable {
    /// Which `ETag` the versions carry.
    public enum EntityTagKind: String, Sendable, Codable { case strong, weak, none }

    /// Names the resource in its path; unique per server.
    public var key: String
    public var entityTag: EntityTagKind
    public var sendsLastModified: Bool
    /// Every answer's `Date` is its version's `Last-Modified`: the dates are weak validators
    /// (RFC 9110 §8.8.2.2), as for a file rewritten in the second it was served. Then, unless
    /// the ETag is strong, a new version may look exactly like the old one (same date, same
    /// length, a weak or no ETag): a change no client can see, which only a client that never
    /// continues such a version with a `Range` survives.
    public var datesAreWeak: Bool
    /// The first version's length.
    public var length: Int
    /// Where the contents' keys come from.
    public var contentSeed: UInt64
    /// What the server does to the requests without a `Range`, in order; those after the
    /// script are answered correctly.
    public var script: [AdversarialStep]
    /// What it does to the requests with a `Range`, in order; likewise.
    public var rangeScript: [AdversarialStep]

    public init(key: String, entityTag: EntityTagKind, sendsLastModified: Bool, datesAreWeak: Bool = false, length: Int,
                contentSeed: UInt64, script: [AdversarialStep], rangeScript: [AdversarialStep]) {
        self.datesAreWeak = datesAreWeak
        self.key = key
        self.entityTag = entityTag
        self.sendsLastModified = sendsLastModified
        self.length = length
        self.contentSeed = contentSeed
        self.script = script
        self.rangeScript = rangeScript
    }
}

/// What the server does with one request.
public struct AdversarialStep: Sendable, Codable, CustomStringConvertible {
    /// A change of the resource, made before the request is answered.
    public enum Change: Sendable, Codable, CustomStringConvertible {
        /// New bytes; a new `ETag` and/or `Last-Modified` when asked (and the resource has
        /// them) and a new length when given. When none of these would tell the new version
        /// from an earlier one, the server changes what it can (ETag, else date, else length).
        case newContent(newEntityTag: Bool, newLastModified: Bool, length: Int?)
        /// The same bytes grown or cut to `length`, the validators unchanged (skipped when
        /// that would look exactly like a version with other bytes).
        case newLength(Int)

        public var description: String {
            switch self {
            case .newContent(let tag, let date, let length):
                "new content (ETag \(tag ? "changed" : "kept"), date \(date ? "changed" : "kept"), length \(length.map(String.init) ?? "kept"))"
            case .newLength(let length): "same bytes, length \(length)"
            }
        }
    }

    /// How a request is answered (when it carries a `Range`; a request without one gets the
    /// whole current version, except for `.status` and `.full200`).
    public enum Answer: Sendable, Codable, CustomStringConvertible {
        /// As RFC 9110 says: `206` for the range when `If-Range` matches, else `200`; `416`
        /// past the end.
        case correct
        /// `200` with the whole version, whatever was asked.
        case full200
        /// A `206` for fewer bytes than asked (`Content-Range` honest): a CDN's cap. The
        /// fraction picks how many of the bytes asked for.
        case short206(Double)
        /// A `206` that starts before the range asked (honest bytes and `Content-Range`).
        case overlapping206(Double)
        /// A `206` that starts after the range asked (honest bytes and `Content-Range`).
        case wrongStart206(Double)
        /// A `206` for the range asked without `Content-Range`.
        case missingContentRange206
        /// A `206` whose body runs past the last byte its `Content-Range` names: the bytes
        /// after it are not the resource's (a client sees it: the body outgrows the range).
        /// The fraction picks how many of the bytes asked for the `Content-Range` names.
        case overlong206(Double)
        /// `416` with `Content-Range: bytes */<length>`, even for a range that could be served.
        case unsatisfiable416
        /// This status (4xx, 5xx) with a short text body.
        case status(Int)
        /// The range asked, honestly, with an unknown complete length: `bytes a-b/*`.
        case unknownTotal206
        /// The bytes asked, under `Content-Range: bytes <first>-9223372036854775807/*`: a last
        /// byte no arithmetic may add one to.
        case extreme206
        /// A redirect with this status (301, 302, 307, 308) to the same resource by another
        /// path (`?hop=`).
        case redirect(Int)

        public var description: String {
            switch self {
            case .correct: "correct"
            case .full200: "200 to a range"
            case .short206(let f): "short 206 (\(String(format: "%.2f", f)))"
            case .overlapping206(let f): "overlapping 206 (\(String(format: "%.2f", f)))"
            case .wrongStart206(let f): "late-start 206 (\(String(format: "%.2f", f)))"
            case .missingContentRange206: "206 without Content-Range"
            case .overlong206(let f): "overlong 206 (\(String(format: "%.2f", f)))"
            case .unsatisfiable416: "416"
            case .status(let code): "status \(code)"
            case .unknownTotal206: "206 of unknown total (/*)"
            case .extreme206: "206 to byte Int64.max"
            case .redirect(let code): "redirect \(code)"
            }
        }
    }

    /// The connection closed before the answer is complete.
    public struct Drop: Sendable, Codable, CustomStringConvertible {
        /// Before the head is sent, or after this fraction of the body.
        public var beforeHead: Bool
        public var bodyFraction: Double
        /// RST (`SO_LINGER` 0) rather than FIN.
        public var reset: Bool

        public init(beforeHead: Bool, bodyFraction: Double, reset: Bool) {
            self.beforeHead = beforeHead
            self.bodyFraction = bodyFraction
            self.reset = reset
        }

        public var description: String {
            (reset ? "RST" : "FIN") + (beforeHead ? " before the head" : " after \(String(format: "%.2f", bodyFraction)) of the body")
        }
    }

    public var change: Change?
    /// Answer a `Range` as if `If-Range` matched, whatever it names.
    public var ignoresIfRange: Bool
    public var answer: Answer
    public var drop: Drop?
    /// The body goes out in chunks of this many bytes…
    public var chunkSize: Int
    /// … with this pause before each chunk after the first.
    public var chunkDelayMicroseconds: Int
    /// The body goes out chunked (`Transfer-Encoding: chunked`, one chunk per write), not
    /// with a `Content-Length`.
    public var chunked = false
    /// A whole answer (200) is gzipped when the request accepts gzip, and its strong `ETag`
    /// sent weak, as nginx's gzip filter does (`Vary: Accept-Encoding`).
    public var gzip = false
    /// This answer's strong `ETag` is sent weak (`W/`), as a transforming proxy may.
    public var weakensEntityTag = false
    /// A 416 carries the version's `ETag` and `Last-Modified`.
    public var validatorsOn416 = false
    /// A complete answer keeps its connection open (no `Connection: close`) and the server
    /// reads the next request on it: the client may reuse it, and the next step may close it
    /// unanswered (a drop before the head), as a keep-alive server's idle timeout does.
    public var keepsAlive = false

    public init(change: Change? = nil, ignoresIfRange: Bool = false, answer: Answer = .correct, drop: Drop? = nil,
                chunkSize: Int = 16 << 10, chunkDelayMicroseconds: Int = 0) {
        self.change = change
        self.ignoresIfRange = ignoresIfRange
        self.answer = answer
        self.drop = drop
        self.chunkSize = max(1, chunkSize)
        self.chunkDelayMicroseconds = max(0, chunkDelayMicroseconds)
    }

    public var description: String {
        var parts: [String] = []
        if let change { parts.append(change.description) }
        if ignoresIfRange { parts.append("ignores If-Range") }
        parts.append(answer.description)
        if chunked { parts.append("chunked") }
        if gzip { parts.append("gzip") }
        if weakensEntityTag { parts.append("ETag sent weak") }
        if validatorsOn416 { parts.append("validators on 416") }
        if keepsAlive { parts.append("kept alive") }
        if let drop { parts.append("drop: \(drop)") }
        return parts.joined(separator: "; ")
    }
}
