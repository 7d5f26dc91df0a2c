import Foundation

/// The rules of RFC 9111 for a private cache, as pure functions.
///
/// Only GET responses are stored and reused; HEAD and other methods always go to the
/// network (a HEAD could be answered from a stored GET, §4, but is not worth the cost).
enum HTTPCachePolicy {
    /// Request fields that make a request conditional or partial; the cache does not
    /// combine the user's own preconditions with its stored responses.
    static let preconditionFields = ["If-None-Match", "If-Modified-Since", "If-Range", "If-Match", "If-Unmodified-Since", "Range"]

    /// Methods that are safe (RFC 9110 §9.2.1) and so never invalidate stored responses.
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// Whether a response may be stored (§3).
    /// - Parameters:
    ///   - method: The request method.
    ///   - requestFields: The request's header fields.
    ///   - status: The response status code.
    ///   - responseFields: The response's header fields.
    /// - Returns: True when a private cache may store the response.
    static func canStore(
        method: String, requestFields: [(name: String, value: String)],
        status: Int, responseFields: [(name: String, value: String)]
    ) -> Bool {
        guard method.uppercased() == "GET" else { return false }
        // §3: the status must be final; 206 and 304 would need partial-content and
        // update handling (§3.3, §4.3.4) that this cache does not implement.
        guard status >= 200, status != 206, status != 304 else { return false }
        let requestDirectives = CacheControl.request(fields: requestFields)
        let responseDirectives = CacheControl(fields: responseFields)
        guard !requestDirectives.noStore, !responseDirectives.noStore else { return false }
        // §4.1: "Vary: *" never matches a later request, so storing it is pointless.
        let vary = HeaderFieldList.listElements(named: "Vary", in: responseFields)
        guard !vary.contains("*") else { return false }
        // §3: `private` allows a private cache to store; §3.5 (Authorization) only
        // restricts shared caches, so neither is checked here.
        return responseDirectives.isPublic
            || responseDirectives.isPrivate
            || responseDirectives.maxAge != nil
            || HeaderFieldList.contains("Expires", in: responseFields)
            || CachedResponse.heuristicallyCacheableStatuses.contains(status)
    }

    /// Whether a response to `method` invalidates the stored responses of its target
    /// URI (§4.4): unsafe methods with a non-error (2xx or 3xx) status do.
    /// - Parameters:
    ///   - method: The request method.
    ///   - status: The response status code.
    /// - Returns: True when the entry for the request's URI must be removed.
    static func invalidates(method: String, status: Int) -> Bool {
        !safeMethods.contains(method.uppercased()) && (200..<400).contains(status)
    }

    /// Decides how to satisfy a request (§4).
    ///
    /// Requests that are not plain GETs (other methods, `Range`, the user's own
    /// preconditions) bypass the cache: `.network(storeResponse: false)`, or
    /// `.unavailable` under `.returnCacheDataDontLoad`, which must never load.
    /// - Parameters:
    ///   - method: The request method.
    ///   - key: The request's cache key; a stored response under another key is ignored.
    ///   - requestFields: The request's header fields.
    ///   - policy: The request's cache policy.
    ///   - stored: The response stored under `key`, if any.
    ///   - now: The current time.
    /// - Returns: The plan to follow.
    static func plan(
        method: String, url key: String, requestFields: [(name: String, value: String)],
        policy: CacheRequestPolicy, stored: CachedResponse?, now: Date
    ) -> CachePlan {
        let bypassesCache = method.uppercased() != "GET"
            || preconditionFields.contains { HeaderFieldList.contains($0, in: requestFields) }
        if bypassesCache {
            return policy == .returnCacheDataDontLoad ? .unavailable : .network(storeResponse: false)
        }
        // §4.1: a stored response whose Vary does not match cannot be used; the new
        // response will replace it because both share one key.
        let usable = stored.flatMap { $0.key == key && $0.matchesVary(requestFields: requestFields) ? $0 : nil }
        switch policy {
        case .reloadIgnoringCache:
            return .network(storeResponse: true)
        case .returnCacheDataElseLoad:
            guard let usable else { return .network(storeResponse: true) }
            return .answer(usable, stale: !usable.isFresh(now: now))
        case .returnCacheDataDontLoad:
            guard let usable else { return .unavailable }
            return .answer(usable, stale: !usable.isFresh(now: now))
        case .useProtocol:
            return protocolPlan(requestFields: requestFields, usable: usable, now: now)
        }
    }

    /// The RFC 9111 plan for `.useProtocol`.
    /// - Parameters:
    ///   - requestFields: The request's header fields.
    ///   - usable: The stored response, already matched on key and Vary.
    ///   - now: The current time.
    /// - Returns: The plan to follow.
    private static func protocolPlan(
        requestFields: [(name: String, value: String)], usable: CachedResponse?, now: Date
    ) -> CachePlan {
        let requestDirectives = CacheControl.request(fields: requestFields)
        guard let usable else {
            return requestDirectives.onlyIfCached ? .unavailable : .network(storeResponse: true)
        }
        let isFresh = usable.isFresh(now: now)
        if canServeWithoutValidation(usable, requestDirectives: requestDirectives, now: now) {
            return .answer(usable, stale: !isFresh)
        }
        // §5.2.1.7: only-if-cached forbids contacting the server, even to validate.
        if requestDirectives.onlyIfCached {
            return .unavailable
        }
        let conditionalFields = conditionalFields(for: usable)
        return conditionalFields.isEmpty
            ? .network(storeResponse: true)
            : .revalidate(usable, conditionalFields: conditionalFields)
    }

    /// Whether a stored response satisfies both its own directives and the request's,
    /// so it may be served without contacting the server (§4, §4.2.4, §5.2).
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - requestDirectives: The request's Cache-Control (and Pragma) directives.
    ///   - now: The current time.
    /// - Returns: True when the stored response may be sent as is.
    static func canServeWithoutValidation(
        _ stored: CachedResponse, requestDirectives: CacheControl, now: Date
    ) -> Bool {
        let responseDirectives = stored.cacheControl
        // §5.2.1.4 and §5.2.2.4: no-cache on either side means validate every time.
        if requestDirectives.noCache || responseDirectives.noCache { return false }
        let age = stored.currentAge(now: now)
        let lifetime = stored.freshnessLifetime
        // §5.2.1.1: the client does not want a response older than max-age.
        if let maxAge = requestDirectives.maxAge, age > TimeInterval(maxAge) { return false }
        // §5.2.1.3: the response must stay fresh for at least min-fresh more seconds.
        if let minFresh = requestDirectives.minFresh, lifetime - age < TimeInterval(minFresh) { return false }
        if lifetime > age { return true }
        // Stale from here on. §5.2.2.2: must-revalidate overrides the client's max-stale.
        if responseDirectives.mustRevalidate { return false }
        // §4.2.4: stale responses are only served when the client allows it (max-stale).
        switch requestDirectives.maxStale {
        case .any: return true
        case .seconds(let allowed): return age - lifetime <= TimeInterval(allowed)
        case nil: return false
        }
    }

    /// The precondition fields that validate a stored response (§4.3.1).
    ///
    /// §4.3.1 says a cache MUST send the entity tag and SHOULD also send Last-Modified,
    /// so both are sent when both are stored (a server evaluates If-None-Match first and
    /// then ignores If-Modified-Since, RFC 9110 §13.2.2).
    /// - Parameter stored: The stored response.
    /// - Returns: `If-None-Match` and/or `If-Modified-Since`; empty without validators.
    static func conditionalFields(for stored: CachedResponse) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        if let etag = stored.etag {
            fields.append((name: "If-None-Match", value: etag))
        }
        if let lastModified = stored.lastModified {
            fields.append((name: "If-Modified-Since", value: lastModified))
        }
        return fields
    }
}
