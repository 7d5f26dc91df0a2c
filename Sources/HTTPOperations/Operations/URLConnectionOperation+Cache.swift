import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The operation's use of its ``HTTPCache`` (RFC 9111): asked when the operation starts,
/// told of the answer before the response serializer sees it.
///
/// Both ends run off the network thread: the plan in `start()` on the operation queue's
/// thread, the answer on the callback queue (a disk tier reads and writes files).
extension URLConnectionOperation {
    /// What the cache decided for this operation's request, kept until its answer arrives.
    struct CacheExchange {
        let cache: HTTPCache
        /// The request as the cache saw it: without the conditional fields it added, with
        /// the operation's credential standing in as `Authorization` (see ``cacheView(of:credential:)``).
        let request: URLRequest
        let plan: CachePlan
        /// When the request left, for the stored response's age (§4.2.3).
        let requestTime: Date
        /// How the cache served the request, once known; nil when it was not consulted
        /// (the request bypassed it: not a GET, a `Range`, the caller's own conditionals).
        var result: CacheResult?
    }

    /// How the cache served one request, as the metrics count it.
    enum CacheResult: String, Sendable {
        /// Answered with a fresh stored response, nothing sent.
        case hit
        /// Answered with a stale stored response the request allowed (`max-stale`,
        /// `.returnCacheDataElseLoad`, `.returnCacheDataDontLoad`), nothing sent.
        case staleHit = "stale_hit"
        /// Sent conditionally; the server's 304 made the stored response the answer.
        case revalidated
        /// Nothing usable was stored (or the revalidation brought a new response).
        case miss
    }

    /// Asks `cache` how to serve `request`. Called by `start()`, off the network thread.
    ///
    /// - Returns: true when the operation is concluded already (answered from the cache, or
    ///   refused because the request may not load and nothing usable is stored). Otherwise
    ///   `request` carries the validators of a revalidation, if any, and the exchange is kept
    ///   for the answer.
    func consultCache(_ cache: HTTPCache, request: inout URLRequest, credential: URLCredential?, bodyInMemory: Bool) -> Bool {
        let view = Self.cacheView(of: request, credential: credential)
        // Only a body collected in memory can be stored or served: a file or a stream
        // consumer gets bytes the cache never holds. Such a request still invalidates.
        let plan: CachePlan = bodyInMemory ? cache.plan(for: view)
            : (request.cachePolicy == .returnCacheDataDontLoad ? .unavailable : .network(storeResponse: false))
        var exchange = CacheExchange(cache: cache, request: view, plan: plan, requestTime: Date(), result: nil)
        switch plan {
        case .answer(let stored, let stale):
            exchange.result = stale ? .staleHit : .hit
            let head = Self.head(answering: stored, at: exchange.requestTime)
            state.withLock { state in
                state.cacheExchange = exchange
                state.responseHead = (head, request.url ?? URL(string: stored.url)!)
                state.response = nil
            }
            conclude(response: nil, data: stored.body, error: nil)
            return true
        case .unavailable:
            exchange.result = .miss
            state.withLock { $0.cacheExchange = exchange }
            conclude(response: nil, data: nil, error: URLError(.resourceUnavailable, url: request.url,
                                                               description: "No stored response can answer \(request.url?.absoluteString ?? "the request"), and its cache policy forbids loading it."))
            return true
        case .revalidate(_, let conditionalFields):
            // A miss unless the server's 304 makes the stored response the answer.
            exchange.result = .miss
            for (name, value) in conditionalFields { request.setValue(value, forHTTPHeaderField: name) }
            state.withLock {
                $0.cacheExchange = exchange
                $0.currentRequest = request
            }
        case .network(let storeResponse):
            if storeResponse { exchange.result = .miss }
            state.withLock { $0.cacheExchange = exchange }
        }
        return false
    }

    /// Tells the cache of the answer: stores it, merges a 304 into the stored response (which
    /// then becomes the operation's response and body), or invalidates after an unsafe
    /// method. On the callback queue, before `processResponse()`.
    func cacheAnswerArrived() {
        let (exchange, head, data, failed) = state.withLock { state in
            (state.cacheExchange, state.responseHead, state.responseData, state.error != nil || state.cancelRequested)
        }
        guard let exchange, !failed, let (head, url) = head else { return }
        // An answer the cache gave needs no storing.
        if case .answer = exchange.plan { return }
        let merged = exchange.cache.responseArrived(for: exchange.request, plan: exchange.plan, status: head.statusCode,
                                                    fields: head.fields, body: data, requestTime: exchange.requestTime,
                                                    responseTime: Date())
        guard let merged else { return }
        let answer = Self.head(answering: merged, at: Date())
        state.withLock { state in
            state.cacheExchange?.result = .revalidated
            state.responseHead = (answer, url)
            state.response = nil
            state.responseData = merged.body
        }
    }

    /// How the cache served this operation's request, if it was consulted.
    var cacheResult: CacheResult? { state.withLock { $0.cacheExchange?.result } }

    /// The head of an answer from the cache: the stored fields, with `Age` (§5.1) saying
    /// how old the stored response is now.
    static func head(answering stored: CachedResponse, at now: Date) -> ResponseHead {
        var fields = stored.fieldList.filter { !fieldNamesMatch($0.name, "Age") }
        fields.append((name: "Age", value: String(Int(stored.currentAge(now: now)))))
        return ResponseHead(statusCode: stored.status, httpVersion: "HTTP/1.1", fields: fields)
    }

    /// `request` as the cache sees it: an operation's credential (sent by curl, not as a
    /// field of the request) stands in as `Authorization`, so a response stored for one
    /// credential is never the answer for another.
    static func cacheView(of request: URLRequest, credential: URLCredential?) -> URLRequest {
        guard let credential, let user = credential.user, request.value(forHTTPHeaderField: "Authorization") == nil else { return request }
        var view = request
        view.setValue("credential \(user):\(credential.password ?? "")", forHTTPHeaderField: "Authorization")
        return view
    }
}
