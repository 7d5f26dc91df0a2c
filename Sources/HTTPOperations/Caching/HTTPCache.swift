import Foundation
#if canImport(FoundationNetworking)
// URLRequest lives in FoundationNetworking on Linux.
import FoundationNetworking
#endif
import Synchronization

/// A private HTTP cache (RFC 9111) for GET responses, kept in memory and optionally on
/// disk.
///
/// Caching is off by default on the manager: assign an `HTTPCache` to the
/// manager's (or an operation's) ``OperationConfiguration/cache`` to enable it. The memory tier is bounded by `memoryCapacity` bytes; the disk tier needs both a
/// `directory` and a positive `diskCapacity`, and survives restarts. Being private, it
/// stores responses marked `private` and responses to requests with `Authorization`, which
/// shared caches must not (§3.5); but a response stored for one credential is never the
/// answer for a request with another or none, and only a digest of the credential is kept.
/// The request's `cachePolicy` says how it is used; Docs/Caching.md has the rules.
///
/// Thread-safety: the statistics are one struct behind one `Mutex`, the invalidation log
/// another; the entries live in an `HTTPCacheStorage`, which has its own lock. All methods may be called from any
/// thread; disk I/O runs on the calling thread.
public final class HTTPCache: Sendable {
    /// Counters of what the cache did since it was created.
    public struct Statistics: Sendable, Equatable {
        /// Requests answered with a fresh stored response.
        public var hits: Int
        /// Requests answered with a stale stored response (allowed by `max-stale` or by
        /// `.returnCacheDataElseLoad` / `.returnCacheDataDontLoad`).
        public var staleHits: Int
        /// 304 (Not Modified) responses merged into a stored response.
        public var revalidations: Int
        /// Plans without a usable stored response: `.network(storeResponse: true)`
        /// (including `.reloadIgnoringCache`) and `.unavailable`. Requests that bypass
        /// the cache (non-GET, Range, the user's own conditionals) are not counted.
        public var misses: Int
        /// Responses stored.
        public var stores: Int
        /// Stored responses removed because an unsafe request changed their URI (§4.4).
        public var invalidations: Int

        /// Creates statistics with the given counts (all zero by default).
        public init(hits: Int = 0, staleHits: Int = 0, revalidations: Int = 0, misses: Int = 0, stores: Int = 0, invalidations: Int = 0) {
            self.hits = hits
            self.staleHits = staleHits
            self.revalidations = revalidations
            self.misses = misses
            self.stores = stores
            self.invalidations = invalidations
        }
    }

    /// Where the entries live.
    let storage: HTTPCacheStorage
    /// See the thread-safety note.
    private let counters = Mutex(Statistics())
    /// When each URL was last invalidated; see the thread-safety note.
    private let invalidations = Mutex(InvalidationLog())

    /// When URLs were invalidated by an unsafe method (§4.4), as a count of invalidations, so
    /// that an answer to a request sent before (a GET that raced a POST, a revalidation) is not
    /// stored again after it: it may be the old version the POST replaced.
    struct InvalidationLog {
        /// The stamp the next invalidation gets; a request is planned with the current one.
        var next: UInt64 = 1
        /// The stamp of each URL's last invalidation (by cache key).
        var byKey: [String: UInt64] = [:]
        /// Stamps below this were forgotten (the log is bounded): a request planned before
        /// it may have been overtaken by any invalidation.
        var forgottenBelow: UInt64 = 0
        /// The most URLs remembered.
        static let capacity = 4_096

        mutating func invalidate(_ key: String) {
            if byKey.count >= Self.capacity {
                forgottenBelow = next
                byKey.removeAll(keepingCapacity: true)
            }
            byKey[key] = next
            next += 1
        }

        /// Whether an answer to a request planned at `ticket` may still be stored under `key`.
        func allowsStoring(_ key: String, plannedAt ticket: UInt64) -> Bool {
            guard ticket >= forgottenBelow else { return false }
            return (byKey[key] ?? 0) < ticket
        }
    }

    /// The stamp to give a request as it is planned (see ``responseArrived(for:plan:status:fields:body:requestTime:responseTime:plannedAt:answeredBy:)``).
    func invalidationTicket() -> UInt64 {
        invalidations.withLock { $0.next }
    }

    /// Creates a cache.
    /// - Parameters:
    ///   - memoryCapacity: The memory tier's bound in bytes (default 4 MiB; 0 disables it).
    ///   - diskCapacity: The disk tier's bound in bytes (default 0: no disk tier).
    ///   - directory: Where the disk tier keeps its files; created with mode 0700 if
    ///     missing. Required for a disk tier.
    /// - Throws: When the directory cannot be created or listed.
    public init(memoryCapacity: Int = 4 << 20, diskCapacity: Int = 0, directory: URL? = nil) throws {
        storage = try HTTPCacheStorage(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, directory: directory)
    }

    /// A snapshot of the counters.
    public var statistics: Statistics { counters.withLock { $0 } }

    /// Removes every stored response (files in the directory that are not the cache's
    /// own are left alone).
    public func removeAllCachedResponses() {
        storage.removeAll()
    }

    /// Removes the stored responses for a URL (every variant: each language, each user).
    /// - Parameter url: The URL whose GET responses should be forgotten.
    public func removeCachedResponse(for url: URL) {
        storage.remove(key: Self.cacheKey(for: url))
    }

    /// Decides how to satisfy a request, loading the stored response it may use.
    /// - Parameters:
    ///   - request: The request about to be sent.
    ///   - now: The current time.
    /// - Returns: The plan; hits and misses are counted here.
    func plan(for request: URLRequest, now: Date = Date()) -> CachePlan {
        let method = Self.method(of: request)
        var fields = Self.headerFields(of: request)
        let (policy, forcesValidation) = Self.requestPolicy(for: request.cachePolicy)
        guard let url = request.url else {
            return policy == .returnCacheDataDontLoad ? .unavailable : .network(storeResponse: false)
        }
        if forcesValidation {
            fields.append((name: "Cache-Control", value: "no-cache"))
        }
        let key = Self.cacheKey(for: url)
        // Only a GET can use a stored response; skip the (possibly disk) lookup otherwise.
        let stored = method == "GET" && policy != .reloadIgnoringCache ? storage.load(key: key, requestFields: fields) : nil
        let plan = HTTPCachePolicy.plan(
            method: method, url: key, requestFields: fields, policy: policy, stored: stored, now: now)
        counters.withLock { counters in
            switch plan {
            case .answer(_, stale: false): counters.hits += 1
            case .answer(_, stale: true): counters.staleHits += 1
            case .network(storeResponse: true), .unavailable: counters.misses += 1
            case .network(storeResponse: false), .revalidate: break
            }
        }
        return plan
    }

    /// Updates the cache after a transfer finished.
    ///
    /// - A 304 to a `.revalidate` plan is merged into the stored response (§4.3.4),
    ///   which is stored again and returned for the caller to answer with. If the 304's
    ///   ETag contradicts the stored one, the entry is dropped and nil is returned.
    /// - A 304 to any other plan (the user's own conditional request) returns nil and
    ///   stores nothing.
    /// - An unsafe method with a 2xx/3xx status removes the URI's entry (§4.4), and no answer
    ///   to a request planned before that (`ticket`) is stored or merged after it: it may be
    ///   the version the unsafe method replaced (a 304 drops the entry).
    /// - Otherwise a storable response (§3) with a body, under a `.network(storeResponse:
    ///   true)` or `.revalidate` plan, is stored, replacing the old entry; returns nil.
    /// - Parameters:
    ///   - request: The request as the user made it (without the cache's conditionals).
    ///   - plan: The plan `plan(for:)` returned for it.
    ///   - status: The response status code.
    ///   - fields: The response header fields, in received order.
    ///   - body: The response content, or nil when it was not kept in memory.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response arrived.
    ///   - ticket: ``invalidationTicket()`` when the request was planned; nil: not checked.
    ///   - answeredBy: The URL that gave the answer, when a redirect was followed: its
    ///     `Location` and `Content-Location` are read against it, on its origin only.
    ///   - answeredByUnsafeMethod: The request that reached `answeredBy` still had an unsafe
    ///     method (a 307 or 308 keeps it): that URL is invalidated too.
    /// - Returns: The merged stored response to answer with, or nil.
    func responseArrived(
        for request: URLRequest, plan: CachePlan, status: Int,
        fields: [(name: String, value: String)], body: Data?,
        requestTime: Date, responseTime: Date, plannedAt ticket: UInt64? = nil, answeredBy: URL? = nil,
        answeredByUnsafeMethod: Bool = false
    ) -> CachedResponse? {
        guard let url = request.url else { return nil }
        let answering = answeredBy ?? url
        let method = Self.method(of: request)
        let key = Self.cacheKey(for: url)
        if HTTPCachePolicy.invalidates(method: method, status: status) {
            // The target, the URL that answered when a redirect that keeps the method (307,
            // 308) took the unsafe request there (it acted on it; not after a 303 made it a
            // GET), and the URLs its `Location` and `Content-Location` name on the same origin
            // (§4.4: never another origin's, which would let a server drop them).
            let named = fields.filter { $0.name.caseInsensitiveCompare("Location") == .orderedSame
                || $0.name.caseInsensitiveCompare("Content-Location") == .orderedSame }
                .compactMap { URL(string: $0.value.trimmingCharacters(in: .whitespaces), relativeTo: answering)?.absoluteURL }
                .filter { RedirectPolicy.isSameOrigin($0, answering) }
            let landed = answeredBy != nil && answeredByUnsafeMethod ? [Self.cacheKey(for: answering)] : []
            for invalidated in Set([key] + landed + named.map(Self.cacheKey)) {
                invalidations.withLock { $0.invalidate(invalidated) }
                storage.remove(key: invalidated)
            }
            counters.withLock { $0.invalidations += 1 }
            return nil
        }
        // Invalidated since the request was planned: its answer may be the version replaced.
        if invalidated(key, since: ticket) {
            if status == 304 || method == "HEAD" { storage.remove(key: key) }
            return nil
        }
        if method == "HEAD" {
            if status == 200 {
                freshen(key: key, withHeadFields: fields, request: request, requestTime: requestTime, responseTime: responseTime)
                dropIfInvalidated(key: key, plannedAt: ticket)
            }
            return nil
        }
        let requestFields = Self.headerFields(of: request)
        if status == 304 {
            guard case .revalidate(let stored, _) = plan else { return nil }
            let merged = mergeNotModified(stored: stored, fields: fields, requestFields: requestFields,
                                          requestTime: requestTime, responseTime: responseTime)
            return dropIfInvalidated(key: key, plannedAt: ticket) ? nil : merged
        }
        let mayStore: Bool
        switch plan {
        case .network(let storeResponse): mayStore = storeResponse
        case .revalidate: mayStore = true
        case .answer, .unavailable: mayStore = false
        }
        guard mayStore, let body,
              HTTPCachePolicy.canStore(method: method, requestFields: requestFields, status: status, responseFields: fields)
        else { return nil }
        storage.store(CachedResponse(
            key: key, url: Self.storedURL(url), status: status, responseFields: HTTPCachePolicy.storableFields(fields), body: body,
            requestFields: requestFields, requestTime: requestTime, responseTime: responseTime))
        counters.withLock { $0.stores += 1 }
        dropIfInvalidated(key: key, plannedAt: ticket)
        return nil
    }

    /// Removes what was just stored under `key` when an unsafe method invalidated it since the
    /// request was planned. The check before storing cannot see an invalidation that lands
    /// between it and the store; this one, after, can: an invalidation logs first, then
    /// removes, so either it removes what was stored or this check sees it.
    /// - Returns: True when the key was invalidated (and its entries removed).
    @discardableResult
    private func dropIfInvalidated(key: String, plannedAt ticket: UInt64?) -> Bool {
        guard invalidated(key, since: ticket) else { return false }
        storage.remove(key: key)
        return true
    }

    /// Whether an unsafe method invalidated `key` since a request was planned at `ticket`
    /// (false without a ticket: not checked).
    private func invalidated(_ key: String, since ticket: UInt64?) -> Bool {
        guard let ticket else { return false }
        return !invalidations.withLock { $0.allowsStoring(key, plannedAt: ticket) }
    }

    /// Forgets one stored response (one variant of its URL): a revalidation of it was answered
    /// with a 304 the cache could not use.
    func removeStored(_ stored: CachedResponse) {
        storage.remove(storageKey: stored.storageKey)
    }

    /// A 200 to a HEAD updates the stored GET response it could have been chosen for, or
    /// drops it (§4.3.5): updated when every validator the HEAD carries (`ETag`,
    /// `Last-Modified`) matches the stored one's and its `Content-Length`, if any, is the
    /// stored body's length; dropped otherwise, a HEAD without validators included (it cannot
    /// show the stored version is current).
    private func freshen(key: String, withHeadFields fields: [(name: String, value: String)], request: URLRequest,
                         requestTime: Date, responseTime: Date) {
        let requestFields = Self.headerFields(of: request)
        guard let stored = storage.load(key: key, requestFields: requestFields), stored.key == key, stored.matchesVary(requestFields: requestFields) else { return }
        let tag = HeaderFieldList.firstValue(named: "ETag", in: fields)
        let date = HeaderFieldList.firstValue(named: "Last-Modified", in: fields)
        let length = HeaderFieldList.firstValue(named: "Content-Length", in: fields)
        // A HEAD's length counts the bytes on the wire; the stored body was decoded (curl
        // undoes a content coding), so the stored response's own `Content-Length` is what it
        // is compared with; the body's count only when the response had none.
        let storedLength = HeaderFieldList.firstValue(named: "Content-Length", in: stored.fieldList).flatMap { HTTPDecimal.parse($0) }
            ?? Int64(stored.body.count)
        let matches = (tag != nil || date != nil)
            && (tag.map { $0 == stored.etag } ?? true)
            && (date.map { $0 == stored.lastModified } ?? true)
            && (length.map { HTTPDecimal.parse($0) == storedLength } ?? true)
        guard matches else {
            storage.remove(storageKey: stored.storageKey)
            return
        }
        // The HEAD's own framing says nothing of the stored body.
        let updates = fields.filter { $0.name.caseInsensitiveCompare("Content-Length") != .orderedSame }
        storeIfStorable(HTTPCachePolicy.merge(stored: stored, notModifiedFields: updates, requestTime: requestTime, responseTime: responseTime),
                        requestFields: requestFields)
    }

    /// Stores a stored response updated by a 304 or a HEAD, or drops it when the update made it
    /// unstorable (a `no-store`, a `Vary: *`: §3).
    private func storeIfStorable(_ merged: CachedResponse, requestFields: [(name: String, value: String)]) {
        if HTTPCachePolicy.canStore(method: "GET", requestFields: requestFields, status: merged.status, responseFields: merged.fieldList) {
            storage.store(merged)
        } else {
            storage.remove(storageKey: merged.storageKey)
        }
    }

    /// Freshens a stored response with a 304 and stores the result (§4.3.4).
    /// - Parameters:
    ///   - stored: The response that was validated.
    ///   - fields: The 304's header fields.
    ///   - requestFields: The user's request fields.
    ///   - requestTime: When the conditional request was sent.
    ///   - responseTime: When the 304 arrived.
    /// - Returns: The merged response, or nil when the 304 is for another representation.
    private func mergeNotModified(
        stored: CachedResponse, fields: [(name: String, value: String)],
        requestFields: [(name: String, value: String)], requestTime: Date, responseTime: Date
    ) -> CachedResponse? {
        guard HTTPCachePolicy.notModifiedMatches(stored: stored, notModifiedFields: fields) else {
            storage.remove(storageKey: stored.storageKey)
            return nil
        }
        let merged = HTTPCachePolicy.merge(
            stored: stored, notModifiedFields: fields, requestTime: requestTime, responseTime: responseTime)
        storeIfStorable(merged, requestFields: requestFields)
        counters.withLock { $0.revalidations += 1 }
        return merged
    }
}
