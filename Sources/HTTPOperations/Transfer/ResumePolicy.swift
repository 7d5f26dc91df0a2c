import Foundation

/// What identifies one version of a resource, sent as `If-Range` so that a server answers a
/// range request with the rest of *the same* bytes, or with the whole new version.
public enum ResumeValidator: Codable, Sendable, Equatable {
    /// A strong entity tag, quotes included (`"abc"`). Weak tags (`W/"abc"`) cannot be used
    /// with `If-Range` (RFC 9110 §13.1.5) and are never stored.
    case entityTag(String)
    /// A `Last-Modified` date, as the server sent it.
    case lastModified(String)

    /// The validator a response offers for `If-Range` (RFC 9110 §13.1.5): its ETag when it
    /// is strong; else, when it has no ETag at all, its `Last-Modified` when that is strong
    /// (§8.8.2.2: at least one second before the response's `Date`); else none. A weak ETag
    /// rules the date out too: a client may send a date only when it has no entity tag.
    ///
    /// - Parameters:
    ///   - etag: The response's `ETag`.
    ///   - lastModified: Its `Last-Modified`.
    ///   - date: Its `Date`.
    init?(etag: String?, lastModified: String?, date: String?) {
        if let etag {
            guard etag.hasPrefix("\"") else { return nil }
            self = .entityTag(etag)
        } else if let lastModified, Self.isStrong(lastModified: lastModified, date: date) {
            self = .lastModified(lastModified)
        } else {
            return nil
        }
    }

    /// Whether a `Last-Modified` date is a strong validator: both dates are valid HTTP dates,
    /// and the response was dated at least a second later (a resource changed twice within
    /// one second keeps its date).
    static func isStrong(lastModified: String, date: String?) -> Bool {
        guard let modified = HTTPDate.parse(lastModified), let date = date.flatMap(HTTPDate.parse) else { return false }
        return date.timeIntervalSince(modified) >= 1
    }

    /// The value to send as `If-Range`.
    public var headerValue: String {
        switch self {
        case .entityTag(let tag): tag
        case .lastModified(let date): date
        }
    }

    // Saved as {"entityTag": "\"abc\""} or {"lastModified": "..."}: a format people read.
    private enum CodingKeys: String, CodingKey {
        case entityTag, lastModified
    }

    /// Reads `{"entityTag": …}` or `{"lastModified": …}`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let tag = try container.decodeIfPresent(String.self, forKey: .entityTag) {
            self = .entityTag(tag)
        } else if let date = try container.decodeIfPresent(String.self, forKey: .lastModified) {
            self = .lastModified(date)
        } else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "A validator needs an entityTag or a lastModified."))
        }
    }

    /// Writes `{"entityTag": …}` or `{"lastModified": …}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .entityTag(let tag): try container.encode(tag, forKey: .entityTag)
        case .lastModified(let date): try container.encode(date, forKey: .lastModified)
        }
    }
}

/// A `Content-Range: bytes first-last/complete` value (RFC 9110 §14.4).
struct ContentRange: Equatable {
    var first: Int64
    var last: Int64
    /// nil when the server sent `*`.
    var completeLength: Int64?

    /// Parses `bytes first-last/complete`; nil for anything else (including `bytes */n`), and
    /// for numbers that are not `1*DIGIT` or that no resource can reach.
    init?(_ value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", maxSplits: 1)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1)
        // `last < Int64.max`: one past the last byte must be a number too (a resource's
        // length), and a server may send the largest value to make `last + 1` overflow.
        guard bounds.count == 2, let first = HTTPDecimal.parse(bounds[0]), let last = HTTPDecimal.parse(bounds[1]),
              first <= last, last < Int64.max else { return nil }
        let complete: Int64?
        if halves[1] == "*" {
            complete = nil
        } else {
            guard let length = HTTPDecimal.parse(halves[1]), length > last else { return nil }
            complete = length
        }
        (self.first, self.last, self.completeLength) = (first, last, complete)
    }

    /// The complete length of an unsatisfied-range answer, `bytes */n`.
    static func unsatisfiedLength(_ value: String?) -> Int64? {
        guard let value else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes */") else { return nil }
        return HTTPDecimal.parse(trimmed.dropFirst(8))
    }
}

/// Reads a server's answer to a range request. Pure: tested without a network.
enum ResumePolicy {
    /// What to do with the answer.
    enum Decision: Equatable {
        /// 206 at the right offset: append the body, up to `end` (one past the last byte its
        /// `Content-Range` names); the complete length when known.
        case append(completeLength: Int64?, end: Int64)
        /// 200: the resource changed, or ranges are not supported: drop what is held and take
        /// the body from byte 0.
        case restartFromZero
        /// 416 whose complete length is exactly what is held: the download was complete.
        case alreadyComplete
        /// Anything inconsistent: append nothing, keep what is held, fail.
        case refuse(ResumeError.Reason)
        /// Not an answer to the range (a redirect, 304, 4xx, 5xx): handled as any response.
        case notARangeAnswer
    }

    /// Decides what a response to `Range: bytes=<held>-` means.
    ///
    /// - Parameters:
    ///   - status: The response status code.
    ///   - contentRange: Its `Content-Range` value.
    ///   - held: The bytes already held, which the range asked to continue from.
    ///   - knownLength: The complete length known from an earlier response, if any.
    static func decide(status: Int, contentRange: String?, held: Int64, knownLength: Int64?) -> Decision {
        switch status {
        case 206:
            guard let value = contentRange, let range = ContentRange(value) else {
                return .refuse(.malformedContentRange(contentRange))
            }
            guard range.first == held else {
                return .refuse(.rangeStartMismatch(expected: held, received: range.first))
            }
            if let known = knownLength, let received = range.completeLength, known != received {
                return .refuse(.lengthChanged(expected: known, received: received))
            }
            // `bytes a-b/*` past the known length: the version is at least b + 1 bytes long,
            // so it is another one (`last < Int64.max` is checked by ContentRange).
            if let known = knownLength, range.completeLength == nil, range.last >= known {
                return .refuse(.lengthChanged(expected: known, received: range.last + 1))
            }
            return .append(completeLength: range.completeLength ?? knownLength, end: range.last + 1)
        case 200:
            return .restartFromZero
        case 201...299:
            // Neither part of the resource nor all of it (a 203, a 204): the download is not
            // complete, and a success here would leave a partial file reported as whole.
            return .refuse(.unexpectedStatus(status))
        case 416:
            let length = ContentRange.unsatisfiedLength(contentRange)
            if let length, length == held, knownLength.map({ $0 == length }) ?? true {
                return .alreadyComplete
            }
            return .refuse(.unsatisfiableRange(held: held, length: length))
        default:
            return .notARangeAnswer
        }
    }
}
