import Foundation

/// Freshening a stored response with a 304 (Not Modified) (RFC 9111 §4.3.3, §4.3.4).
extension HTTPCachePolicy {
    /// Fields of a 304 that never replace the stored ones: the stored body was framed
    /// and decoded according to these (§4.3.4 excludes Content-Length and lets a cache
    /// keep fields its stored content depends on). The fields §3.1 excludes from storage
    /// are dropped before (``storableFields(_:)``).
    static let fieldsKeptOnUpdate: Set<String> = ["content-length", "content-encoding", "content-range"]

    /// Fields a cache does not store (§3.1): those about the connection the response came
    /// on (MUST NOT), and the proxy's authentication fields (SHOULD NOT: they are another
    /// hop's, and may name a credential). And `Set-Cookie`: a credential the server gave the
    /// one client it answered (whose cookie store took it from the wire); a stored response
    /// answers every later caller of the same identity, and would hand it to each.
    static let unstoredFields: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authentication-info", "proxy-authorization", "set-cookie",
    ]

    /// `fields` without those a cache must not store: ``unstoredFields`` and every field
    /// its `Connection` names.
    static func storableFields(_ fields: [(name: String, value: String)]) -> [(name: String, value: String)] {
        let named = Set(HeaderFieldList.listElements(named: "Connection", in: fields).map { $0.lowercased() })
        return fields.filter { field in
            let name = field.name.lowercased()
            return !unstoredFields.contains(name) && !named.contains(name)
        }
    }

    /// Updates a stored response with the header fields of a 304 (§4.3.4).
    ///
    /// Each field name present in the 304 replaces all stored lines of that name,
    /// except `fieldsKeptOnUpdate` and those never stored (``storableFields(_:)``). Stored
    /// fields that are not replaced keep their order; the new lines follow them in
    /// received order. Status, body and Vary context stay; the times become the new
    /// exchange's, so the age is computed from the validation (§4.2.3), and a 304 without
    /// `Date` gets its arrival time as `Date`.
    /// - Parameters:
    ///   - stored: The stored response that was validated.
    ///   - notModifiedFields: The header fields of the 304.
    ///   - requestTime: When the conditional request was sent.
    ///   - responseTime: When the 304 arrived.
    /// - Returns: The updated response to store and to answer with.
    static func merge(
        stored: CachedResponse, notModifiedFields: [(name: String, value: String)],
        requestTime: Date, responseTime: Date
    ) -> CachedResponse {
        var incoming = storableFields(notModifiedFields).filter { !fieldsKeptOnUpdate.contains($0.name.lowercased()) }
        if HeaderFieldList.firstValue(named: "Date", in: notModifiedFields) == nil {
            // RFC 9110 §6.6.1: a recipient adds its receipt time as `Date`. The stored one would
            // age the freshened response from the first exchange (stale at once, §4.2.3).
            incoming.append((name: "Date", value: HTTPDate.format(responseTime)))
        }
        let replacedNames = Set(incoming.map { $0.name.lowercased() })
        var merged = stored
        merged.headerFields = stored.headerFields.filter { !replacedNames.contains($0.name.lowercased()) }
            + incoming.map { CachedResponse.Field(name: $0.name, value: $0.value) }
        merged.requestTime = requestTime
        merged.responseTime = responseTime
        return merged
    }

    /// Whether a 304 refers to the stored response (§4.3.4): when both carry an entity
    /// tag they must match by weak comparison (RFC 9110 §8.8.3.2); otherwise the 304
    /// answers the validator the cache sent and is taken to match.
    /// - Parameters:
    ///   - stored: The stored response that was validated.
    ///   - notModifiedFields: The header fields of the 304.
    /// - Returns: False only when the two entity tags differ.
    static func notModifiedMatches(stored: CachedResponse, notModifiedFields: [(name: String, value: String)]) -> Bool {
        guard let storedTag = stored.etag,
              let newTag = HeaderFieldList.firstValue(named: "ETag", in: notModifiedFields)
        else { return true }
        return weakOpaqueTag(storedTag) == weakOpaqueTag(newTag)
    }

    /// The opaque part of an entity tag, without the `W/` weakness prefix.
    /// - Parameter tag: An entity tag such as `W/"abc"`.
    /// - Returns: The tag as compared by the weak comparison function.
    private static func weakOpaqueTag(_ tag: String) -> String {
        tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
    }
}
