import Foundation

/// The directives of a message's `Cache-Control` fields (RFC 9111 §5.2).
///
/// Parsing is lenient where the RFC asks recipients to be: directive names are
/// case-insensitive, values may be tokens or quoted strings (§5.2: "a recipient ought to
/// accept both forms"), unknown directives are ignored (§5.2.3), invalid delta-seconds
/// are ignored, and when a directive repeats the first valid value wins (§4.2.1 lets a
/// cache use the first occurrence).
struct CacheControl: Equatable, Sendable {
    /// How much staleness a request's `max-stale` directive accepts (§5.2.1.2).
    enum MaxStale: Equatable, Sendable {
        /// `max-stale` without a value: any stale response is acceptable.
        case any
        /// `max-stale=N`: a response stale by at most N seconds is acceptable.
        case seconds(Int)
    }

    /// `max-age=N` (§5.2.1.1 on requests, §5.2.2.1 on responses).
    var maxAge: Int?
    /// `s-maxage=N` (§5.2.2.10); parsed for completeness, ignored by a private cache.
    var sharedMaxAge: Int?
    /// `max-stale[=N]` (§5.2.1.2), request only.
    var maxStale: MaxStale?
    /// `min-fresh=N` (§5.2.1.3), request only.
    var minFresh: Int?
    /// `no-cache` (§5.2.1.4, §5.2.2.4). The field-qualified response form `no-cache="x"`
    /// also sets this: treating it as unqualified is simpler and always safe.
    var noCache = false
    /// `no-store` (§5.2.1.5, §5.2.2.5).
    var noStore = false
    /// `private` (§5.2.2.7); a private cache may store such responses.
    var isPrivate = false
    /// `public` (§5.2.2.9).
    var isPublic = false
    /// `must-revalidate` (§5.2.2.2): once stale, never served without validation.
    var mustRevalidate = false
    /// `only-if-cached` (§5.2.1.7), request only.
    var onlyIfCached = false
    /// `immutable` (RFC 8246); recorded, not used by the freshness rules.
    var immutable = false

    /// Parses every `Cache-Control` line of a message.
    /// - Parameter fields: The message's header fields, in received order.
    init(fields: [(name: String, value: String)]) {
        for line in HeaderFieldList.values(named: "Cache-Control", in: fields) {
            for directive in HeaderFieldList.splitList(line) {
                apply(directive)
            }
        }
    }

    /// The directives of a request, honouring `Pragma: no-cache` when the request has no
    /// `Cache-Control` field at all (§5.4: Pragma only matters for HTTP/1.0 senders).
    /// - Parameter fields: The request's header fields.
    /// - Returns: The request's cache directives.
    static func request(fields: [(name: String, value: String)]) -> CacheControl {
        var directives = CacheControl(fields: fields)
        if !HeaderFieldList.contains("Cache-Control", in: fields) {
            let pragma = HeaderFieldList.listElements(named: "Pragma", in: fields)
            if pragma.contains(where: { $0.lowercased() == "no-cache" }) {
                directives.noCache = true
            }
        }
        return directives
    }

    /// Records one directive such as `max-age=60` or `no-cache="Set-Cookie"`.
    /// - Parameter directive: One trimmed element of the Cache-Control list.
    private mutating func apply(_ directive: String) {
        let name: String
        let value: String?
        if let equals = directive.firstIndex(of: "=") {
            // `token "=" ( token / quoted-string )` (§5.2): no space around the "=".
            // `max-age= 3600` is no valid directive; the name still is read, so that an
            // invalid max-age makes the response stale as §1.2.2 asks.
            let rawName = directive[..<equals], rawValue = directive[directive.index(after: equals)...]
            name = rawName.trimmingCharacters(in: .whitespaces).lowercased()
            let spaced = rawName.last.map { $0 == " " || $0 == "\t" } ?? false
                || rawValue.first.map { $0 == " " || $0 == "\t" } ?? false
            value = spaced ? nil : Self.unquote(String(rawValue))
        } else {
            name = directive.lowercased()
            value = nil
        }
        switch name {
        // §1.2.2: an invalid max-age makes the response stale, rather than letting a
        // heuristic (or nothing) decide.
        case "max-age": maxAge = maxAge ?? value.flatMap(Self.deltaSeconds) ?? 0
        case "s-maxage": sharedMaxAge = sharedMaxAge ?? value.flatMap(Self.deltaSeconds)
        case "min-fresh": minFresh = minFresh ?? value.flatMap(Self.deltaSeconds)
        case "max-stale":
            guard maxStale == nil else { return }
            if let value {
                // An invalid value is ignored rather than widened to "any staleness".
                maxStale = Self.deltaSeconds(value).map(MaxStale.seconds)
            } else {
                maxStale = .any
            }
        case "no-cache": noCache = true
        case "no-store": noStore = true
        case "private": isPrivate = true
        case "public": isPublic = true
        case "must-revalidate": mustRevalidate = true
        case "only-if-cached": onlyIfCached = true
        case "immutable": immutable = true
        default: break  // §5.2.3: unknown extensions are ignored.
        }
    }

    /// Parses delta-seconds (§1.2.2): one or more ASCII digits; values too large for the
    /// implementation become 2147483648 as that section requires.
    /// - Parameter text: The directive value.
    /// - Returns: The number of seconds, or nil when the text is not delta-seconds.
    static func deltaSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let limit = 2_147_483_648
        guard let number = Int(text), number < limit else { return limit }
        return number
    }

    /// Returns the content of a quoted-string (RFC 9110 §5.6.4) or the token unchanged.
    /// - Parameter text: A directive value, quoted or not.
    /// - Returns: The unescaped value, or nil when a quoted string is not terminated.
    private static func unquote(_ text: String) -> String? {
        guard text.hasPrefix("\"") else { return text }
        var result = ""
        var escaped = false
        for character in text.dropFirst() {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                return result
            } else {
                result.append(character)
            }
        }
        return nil
    }
}
