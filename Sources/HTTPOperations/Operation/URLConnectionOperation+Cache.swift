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
        /// what curl adds standing in as fields (see ``cacheView(of:settings:)``).
        let request: URLRequest
        let plan: CachePlan
        /// When the request left, for the stored response's age (§4.2.3).
        let requestTime: Date
        /// The cache's invalidation stamp when the request was planned: an answer overtaken by
        /// an invalidation of its URL is not stored.
        let ticket: UInt64
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
    func consultCache(_ cache: HTTPCache, request: inout URLRequest, settings: Settings) -> Bool {
        let view = Self.cacheView(of: request, settings: settings)
        let ticket = cache.invalidationTicket()
        let plan: CachePlan = Self.canUseCache(settings) ? cache.plan(for: view)
            : (request.cachePolicy == .returnCacheDataDontLoad ? .unavailable : .network(storeResponse: false))
        var exchange = CacheExchange(cache: cache, request: view, plan: plan, requestTime: Date(), ticket: ticket, result: nil)
        switch plan {
        case .answer(let stored, let stale):
            exchange.result = stale ? .staleHit : .hit
            if let limit = settings.download.maximumBodySize, Int64(stored.body.count) > limit {
                // The limit holds for a stored body as for the server's: the same failure.
                state.withLock { $0.cacheExchange = exchange }
                conclude(.outcome(error: TransferError.bodyTooLarge(limit: limit, url: request.url)))
                return true
            }
            let head = Self.head(answering: stored, at: exchange.requestTime)
            state.withLock { state in
                state.cacheExchange = exchange
                state.responseHead = (head, request.url ?? URL(string: stored.url)!)
                state.response = nil
            }
            conclude(.outcome(data: stored.body, error: nil))
            return true
        case .unavailable:
            exchange.result = .miss
            state.withLock { $0.cacheExchange = exchange }
            conclude(.outcome(error: URLError(.resourceUnavailable, url: request.url,
                                              description: "No stored response can answer \(request.url?.absoluteString ?? "the request"), and its cache policy forbids loading it.")))
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

    /// Whether the cache may serve or store this operation's answer. Not when the body goes
    /// to a file or a stream consumer (the cache never holds those bytes); not when a
    /// challenge block may supply a credential the cache cannot know of when it is asked;
    /// not when the body must pass an integrity check (`expectedSHA256`, `expectedLength`),
    /// which an answer from the cache would skip. Such a request still invalidates.
    static func canUseCache(_ settings: Settings) -> Bool {
        settings.download.destination == nil && settings.bodyChannel == nil && settings.outputStream.value == nil
            && settings.challengeBlock == nil
            && settings.download.expectedSHA256 == nil && settings.download.expectedLength == nil
    }

    /// Tells the cache of the answer: stores it, merges a 304 into the stored response (which
    /// then becomes the operation's response and body), or invalidates after an unsafe
    /// method. On the callback queue, before `processResponse()`.
    ///
    /// An answer that came from another URL (a redirect was followed) is not stored under the
    /// request's: the redirect itself may change. A 304 the cache cannot use (from a redirect
    /// target, or naming another version than the stored one) fails the operation with
    /// `URLError(.badServerResponse)`: it answers a condition the caller never set, and the
    /// stored response is dropped, so sending the request again loads it.
    func cacheAnswerArrived() {
        let (exchange, head, data, failed, finalRequest, limit) = state.withLock { state in
            (state.cacheExchange, state.responseHead, state.responseData, state.error != nil || state.cancelRequested,
             state.currentRequest, state.settings.download.maximumBodySize)
        }
        guard let exchange, let (head, url) = head else { return }
        // The request that reached `url` (after redirects): unsafe still after a 307 or 308.
        let landedUnsafe = !HTTPCachePolicy.safeMethods.contains(HTTPCache.method(of: finalRequest))
        if failed {
            // An unsafe request's non-error head is enough to invalidate (§4.4): the server
            // acted on it, whether or not its body then arrived whole. Nothing is stored.
            if HTTPCachePolicy.invalidates(method: HTTPCache.method(of: exchange.request), status: head.statusCode) {
                _ = exchange.cache.responseArrived(for: exchange.request, plan: .network(storeResponse: false), status: head.statusCode,
                                                   fields: head.fields, body: nil, requestTime: exchange.requestTime,
                                                   responseTime: Date(), plannedAt: exchange.ticket, answeredBy: url,
                                                   answeredByUnsafeMethod: landedUnsafe)
            }
            return
        }
        // An answer the cache gave needs no storing.
        if case .answer = exchange.plan { return }
        let redirected = exchange.request.url.map(HTTPCache.storedURL) != HTTPCache.storedURL(url)
        let plan = redirected ? .network(storeResponse: false) : exchange.plan
        let merged = exchange.cache.responseArrived(for: exchange.request, plan: plan, status: head.statusCode,
                                                    fields: head.fields, body: data, requestTime: exchange.requestTime,
                                                    responseTime: Date(), plannedAt: exchange.ticket, answeredBy: url,
                                                    answeredByUnsafeMethod: landedUnsafe)
        if merged == nil, head.statusCode == 304, case .revalidate(let stored, _) = exchange.plan {
            exchange.cache.removeStored(stored)
            let error = URLError(.badServerResponse, url: url, description: "The server answered the cache's revalidation of \(stored.url) with a 304 "
                                 + (redirected ? "from \(HTTPCache.storedURL(url)) after a redirect" : "naming another version than the one stored")
                                 + "; the stored response was dropped, so sending the request again loads it.")
            state.withLock { $0.error = error }
            return
        }
        guard let merged else { return }
        if let limit, Int64(merged.body.count) > limit {
            // The limit holds for a stored body made the answer, as for the server's.
            state.withLock { $0.error = TransferError.bodyTooLarge(limit: limit, url: url) }
            return
        }
        var answer = Self.head(answering: merged, at: Date())
        // The 304's `Set-Cookie` is for this client (never stored): its response keeps it.
        let cookies = head.fields.filter { fieldNamesMatch($0.name, "Set-Cookie") }
        if !cookies.isEmpty {
            answer = ResponseHead(statusCode: answer.statusCode, httpVersion: answer.httpVersion, fields: answer.fields + cookies)
        }
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
        // Bounded: `Age` is delta-seconds, and a date from the year 1 must not trap.
        fields.append((name: "Age", value: String(Int(min(stored.currentAge(now: now), 2_147_483_648)))))
        return ResponseHead(statusCode: stored.status, httpVersion: "HTTP/1.1", fields: fields)
    }

    /// `request` as the cache sees it. What curl adds to the request, which the cache would
    /// not see, stands in as the field it becomes, so that a response stored for one is never
    /// the answer for another:
    /// - the operation's credential, or the URL's `user:password@`, as `Authorization` (the
    ///   cache keeps only its digest);
    /// - the operation's cookie store as `Cookie` (after the request's own, if any), by its
    ///   identity in this process: a response is the answer only for requests with the same
    ///   store, and never for one after a restart;
    /// - the caller's ``URLConnectionOperation/cachePartition``, the values of its
    ///   ``OperationConfiguration/sensitiveHeaderFields``, the client certificate its security
    ///   policy presents for the URL's host, and a route's Unix socket and host overrides (they
    ///   choose the server), under a name no request on the wire carries.
    static func cacheView(of request: URLRequest, settings: Settings) -> URLRequest {
        var view = request
        if request.value(forHTTPHeaderField: "Authorization") == nil {
            if let credential = settings.configuration.credential, let user = credential.user {
                view.setValue("credential \(user):\(credential.password ?? "")", forHTTPHeaderField: "Authorization")
            } else if let url = request.url, url.user != nil || url.password != nil {
                view.setValue("credential \(url.user ?? ""):\(url.password ?? "")", forHTTPHeaderField: "Authorization")
            }
        }
        if let store = settings.configuration.cookieStore, request.httpShouldHandleCookies {
            // Beside the request's own `Cookie`, if any: curl sends the store's cookies too.
            let own = request.value(forHTTPHeaderField: "Cookie").map { "\($0); " } ?? ""
            view.setValue("\(own)cookie store \(store.identity)", forHTTPHeaderField: "Cookie")
        }
        // The caller's partition, and the values of the fields it named sensitive (an API key):
        // each names whom the request speaks for.
        // Each part length-prefixed (no CR or LF: Foundation drops a field value holding one).
        var parts = settings.configuration.sensitiveHeaderFields.sorted().compactMap { name in
            request.value(forHTTPHeaderField: name).map { "\(name.utf8.count):\(name)=\($0.utf8.count):\($0)" }
        }
        // Who the TLS handshake says the client is, and which server a route reaches for the
        // URL: neither is in the request, and each may change the answer.
        if request.url?.scheme?.lowercased() == "https",
           let identity = settings.configuration.securityPolicies.policy(forHostOf: request.url).clientIdentity {
            parts.append("client-certificate:\(identity.parsedCertificate.fingerprint)")
        }
        let route = settings.configuration.route
        if let socket = route.unixSocketPath { parts.append("unix-socket:\(socket.utf8.count):\(socket)") }
        let host = request.url?.host?.lowercased()
        parts += route.hostOverrides.filter { $0.host.lowercased() == host }.map { "connect-to:\($0.connectToEntry)" }
        if settings.cachePartition != nil || !parts.isEmpty {
            let partition = ([settings.cachePartition.map { "\($0.utf8.count):\($0)" } ?? "-"] + parts).joined(separator: ",")
            view.setValue(partition, forHTTPHeaderField: CachedResponse.partitionField)
        }
        return view
    }
}
