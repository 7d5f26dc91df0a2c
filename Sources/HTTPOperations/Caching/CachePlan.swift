import Foundation

/// How a request wants the cache to be used; the library maps
/// `URLRequest.CachePolicy` onto it (see `HTTPCache.requestPolicy(for:)`):
///
/// - `.useProtocolCachePolicy` → `.useProtocol`
/// - `.reloadIgnoringLocalCacheData` and `.reloadIgnoringLocalAndRemoteCacheData` →
///   `.reloadIgnoringCache` (this cache cannot steer caches further along the path
///   without rewriting the request, which it leaves to the library)
/// - `.reloadRevalidatingCacheData` → `.useProtocol` with a forced `no-cache`, i.e. any
///   stored response is validated before use
/// - `.returnCacheDataElseLoad` / `.returnCacheDataDontLoad` → the cases of the same name
enum CacheRequestPolicy: Sendable, Equatable {
    /// Follow RFC 9111: serve fresh responses, validate stale ones.
    case useProtocol
    /// Never answer from the cache, but store the new response if allowed.
    case reloadIgnoringCache
    /// Answer with any stored response whose Vary matches, however stale; else load.
    case returnCacheDataElseLoad
    /// Answer with any stored response whose Vary matches, however stale; never load.
    case returnCacheDataDontLoad
}

/// What to do with a request, decided by `HTTPCachePolicy.plan`.
enum CachePlan: Sendable {
    /// Send the request unchanged; `storeResponse` says whether its response may be
    /// stored (still subject to `HTTPCachePolicy.canStore`).
    case network(storeResponse: Bool)
    /// Answer with the stored response without contacting the server.
    case answer(CachedResponse, stale: Bool)
    /// Send the request with `conditionalFields` added; a 304 means the stored
    /// response can be used after merging (§4.3).
    case revalidate(CachedResponse, conditionalFields: [(name: String, value: String)])
    /// The request must not touch the network and nothing usable is stored
    /// (`only-if-cached`, §5.2.1.7, or `.returnCacheDataDontLoad`); the library answers
    /// 504 (Gateway Timeout) or an equivalent error.
    case unavailable
}
