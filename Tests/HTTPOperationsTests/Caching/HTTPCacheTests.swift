import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct HTTPCacheTests {
        static let url = URL(string: "https://example.com/a?b=1#section")!

        static func request(_ method: String? = nil, fields: [String: String] = [:], policy: URLRequest.CachePolicy = .useProtocolCachePolicy) -> URLRequest {
            var request = URLRequest(url: url, cachePolicy: policy)
            request.httpMethod = method
            for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
            return request
        }

        /// A request for `url` with `method` (GET when nil).
        static func request(at url: String, _ method: String? = nil) -> URLRequest {
            var request = URLRequest(url: URL(string: url)!)
            request.httpMethod = method
            return request
        }

        /// Runs one exchange: plan, then (if the plan loads) a response.
        @discardableResult
        static func exchange(
            _ cache: HTTPCache, _ request: URLRequest, now: TimeInterval,
            status: Int = 200, fields: [(name: String, value: String)], body: String? = "body"
        ) -> (plan: CachePlan, merged: CachedResponse?) {
            let plan = cache.plan(for: request, now: cacheTime(now))
            switch plan {
            case .answer, .unavailable: return (plan, nil)
            case .network, .revalidate:
                let merged = cache.responseArrived(
                    for: request, plan: plan, status: status, fields: fields, body: body.map { Data($0.utf8) },
                    requestTime: cacheTime(now), responseTime: cacheTime(now))
                return (plan, merged)
            }
        }

        @Test func keyDropsFragment() {
            #expect(HTTPCache.cacheKey(for: Self.url) == "GET https://example.com/a?b=1")
        }

        @Test func methodDefaultsToGET() {
            var request = Self.request()
            request.httpMethod = nil
            #expect(HTTPCache.method(of: request) == "GET")
            #expect(HTTPCache.method(of: Self.request("post")) == "POST")
        }

        @Test func storesThenAnswersFresh() throws {
            let cache = try HTTPCache()
            let fields = [(name: "Date", value: cacheHTTPDate(0)), (name: "Cache-Control", value: "max-age=60")]
            #expect(Self.exchange(cache, Self.request(), now: 0, fields: fields).plan.kind == .network(store: true))
            guard case .answer(let response, stale: false) = cache.plan(for: Self.request(), now: cacheTime(30)) else {
                Issue.record("expected a fresh answer")
                return
            }
            #expect(response.body == Data("body".utf8))
            #expect(response.key == "GET https://example.com/a?b=1")
            #expect(cache.statistics == HTTPCache.Statistics(hits: 1, misses: 1, stores: 1))
        }

        @Test func revalidatesAndMergesNotModified() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0,
                          fields: [("Date", cacheHTTPDate(0)), ("Cache-Control", "max-age=60"), ("ETag", "\"v1\""), ("Content-Length", "4")])
            let (plan, merged) = Self.exchange(cache, Self.request(), now: 100, status: 304,
                                               fields: [("Date", cacheHTTPDate(100)), ("Content-Length", "0"), ("Cache-Control", "max-age=600")], body: nil)
            #expect(plan.conditionalPairs == [["If-None-Match", "\"v1\""]])
            #expect(merged?.body == Data("body".utf8))
            #expect(merged?.value(of: "content-length") == "4")
            #expect(merged?.value(of: "Cache-Control") == "max-age=600")
            #expect(cache.plan(for: Self.request(), now: cacheTime(200)).kind == .answer(stale: false))
            #expect(cache.statistics == HTTPCache.Statistics(hits: 1, revalidations: 1, misses: 1, stores: 1))
        }

        @Test func fullResponseToRevalidationReplacesEntry() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0, fields: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")])
            Self.exchange(cache, Self.request(), now: 100, fields: [("Cache-Control", "max-age=60"), ("ETag", "\"v2\"")], body: "new")
            guard case .answer(let response, _) = cache.plan(for: Self.request(), now: cacheTime(110)) else {
                Issue.record("expected an answer")
                return
            }
            #expect(response.etag == "\"v2\"")
            #expect(response.body == Data("new".utf8))
        }

        @Test func notModifiedWithOtherETagDropsEntry() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0, fields: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")])
            let (_, merged) = Self.exchange(cache, Self.request(), now: 100, status: 304, fields: [("ETag", "\"v9\"")], body: nil)
            #expect(merged == nil)
            #expect(cache.plan(for: Self.request(), now: cacheTime(101)).kind == .network(store: true))
        }

        @Test func notModifiedToUsersOwnConditionalIsIgnored() throws {
            let cache = try HTTPCache()
            let request = Self.request(fields: ["If-None-Match": "\"v1\""])
            let (plan, merged) = Self.exchange(cache, request, now: 0, status: 304, fields: [("ETag", "\"v1\"")], body: nil)
            #expect(plan.kind == .network(store: false))
            #expect(merged == nil)
            #expect(cache.statistics == HTTPCache.Statistics())
        }

        @Test func usersConditionalResponseIsNotStored() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(fields: ["if-modified-since": cacheHTTPDate(-10)]), now: 0, fields: [("Cache-Control", "max-age=60")])
            #expect(cache.plan(for: Self.request(), now: cacheTime(1)).kind == .network(store: true))
            #expect(cache.statistics.stores == 0)
        }

        @Test func unsafeMethodInvalidates() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0, fields: [("Cache-Control", "max-age=60")])
            Self.exchange(cache, Self.request("post"), now: 1, status: 500, fields: [])
            #expect(cache.plan(for: Self.request(), now: cacheTime(2)).kind == .answer(stale: false))
            Self.exchange(cache, Self.request("POST"), now: 3, status: 201, fields: [])
            #expect(cache.plan(for: Self.request(), now: cacheTime(4)).kind == .network(store: true))
            #expect(cache.statistics.invalidations == 1)
        }

        /// One spelling per origin in the key, the one curl connects to (issue 38, item 6): the
        /// scheme and host in lower case, an IPv4 address in any `inet_aton` form
        /// dotted-decimal, an IPv6 address in its RFC 5952 form, no default port.
        @Test(arguments: [
            ("http://127.1/a", "GET http://127.0.0.1/a"),
            ("http://2130706433:8080/a?q=1", "GET http://127.0.0.1:8080/a?q=1"),
            ("http://0x7f000001/a", "GET http://127.0.0.1/a"),
            ("HTTP://Example.COM./a", "GET http://example.com/a"),
            ("http://example.com:80/a", "GET http://example.com/a"),
            ("https://example.com:443/a", "GET https://example.com/a"),
            ("https://example.com:8443/a", "GET https://example.com:8443/a"),
            ("http://[0:0:0:0:0:0:0:1]:8080/a", "GET http://[::1]:8080/a"),
            ("http://user:secret@127.0.0.1/a#top", "GET http://127.0.0.1/a"),
        ])
        func keyNamesTheOriginAsCurlConnectsToIt(_ url: String, _ key: String) {
            #expect(HTTPCache.cacheKey(for: URL(string: url)!) == key)
        }

        /// Hosts that Foundation reads back decoded (an international name, a zone id, a
        /// percent escape) keep their encoded spelling: setting the decoded text back as the
        /// encoded host trapped the process (found by review).
        @Test(arguments: [
            ("http://xn--bcher-kva.example/a", "GET http://xn--bcher-kva.example/a"),
            ("http://[fe80::1%25eth0]:8080/a", "GET http://[fe80::1%25eth0]:8080/a"),
            ("http://a%20b.example/a", "GET http://a%20b.example/a"),
        ])
        func keyKeepsAnEncodedHostEncoded(_ url: String, _ key: String) {
            #expect(HTTPCache.cacheKey(for: URL(string: url)!) == key)
        }

        /// After a redirect, the `Location` of the final answer is read against the URL that
        /// answered, and only that origin's entries go: another origin's reply dropped the
        /// first origin's entry before (found by review).
        @Test func anAnswerFromARedirectInvalidatesOnItsOwnOrigin() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(at: "http://127.0.0.1:8080/cached"), now: 0, fields: [("Cache-Control", "max-age=60")])
            _ = cache.responseArrived(for: Self.request(at: "http://127.0.0.1:8080/p", "POST"), plan: .network(storeResponse: false),
                                      status: 201, fields: [("Location", "/cached")], body: nil,
                                      requestTime: cacheTime(1), responseTime: cacheTime(1),
                                      answeredBy: URL(string: "http://127.0.0.1:9090/p")!)
            #expect(cache.plan(for: Self.request(at: "http://127.0.0.1:8080/cached"), now: cacheTime(2)).kind == .answer(stale: false))
        }

        /// RFC 9111 §4.3.5: a 200 to a HEAD freshens the stored GET it could have been chosen
        /// for when its validators and length match, and drops it when they do not.
        @Test func aHeadFreshensOrDropsTheStoredGet() throws {
            let url = "https://example.com/doc"
            func stored(_ cache: HTTPCache) {
                Self.exchange(cache, Self.request(at: url), now: 0, fields: [("Cache-Control", "max-age=10"), ("ETag", "\"v1\""),
                                                                            ("Date", cacheHTTPDate(0))])
            }
            func head(_ cache: HTTPCache, _ fields: [(String, String)], at now: TimeInterval) {
                _ = cache.responseArrived(for: Self.request(at: url, "HEAD"), plan: .network(storeResponse: false), status: 200,
                                          fields: fields.map { (name: $0.0, value: $0.1) }, body: nil,
                                          requestTime: cacheTime(now), responseTime: cacheTime(now))
            }
            // Matching validator and length: fresh again for another 10 s from the HEAD.
            let freshened = try HTTPCache()
            stored(freshened)
            head(freshened, [("ETag", "\"v1\""), ("Content-Length", "4"), ("Cache-Control", "max-age=10"), ("Date", cacheHTTPDate(20))], at: 20)
            #expect(freshened.plan(for: Self.request(at: url), now: cacheTime(25)).kind == .answer(stale: false))
            // Another ETag, another length, or no validator at all: the stored GET goes.
            for fields in [[("ETag", "\"v2\"")], [("ETag", "\"v1\""), ("Content-Length", "9")], [("Cache-Control", "max-age=10")]] {
                let cache = try HTTPCache()
                stored(cache)
                head(cache, fields, at: 5)
                #expect(cache.plan(for: Self.request(at: url), now: cacheTime(6)).kind == .network(store: true), "\(fields)")
            }
        }

        /// A HEAD names the length of the bytes on the wire; a stored body is decoded (curl
        /// undoes the content coding). A HEAD that agrees with the stored gzip response freshens
        /// it: its encoded `Content-Length` is compared with the stored response's own, not
        /// with the decoded body's count (which dropped every gzip entry a HEAD met).
        @Test func aHeadFreshensAStoredResponseWhoseBodyWasDecoded() throws {
            let url = "https://example.com/zipped"
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(at: url), now: 0, fields: [("Cache-Control", "max-age=10"), ("ETag", "\"v1\""),
                                                                        ("Content-Encoding", "gzip"), ("Content-Length", "24"),
                                                                        ("Date", cacheHTTPDate(0))])
            _ = cache.responseArrived(for: Self.request(at: url, "HEAD"), plan: .network(storeResponse: false), status: 200,
                                      fields: [("ETag", "\"v1\""), ("Content-Encoding", "gzip"), ("Content-Length", "24"),
                                               ("Cache-Control", "max-age=10"), ("Date", cacheHTTPDate(20))],
                                      body: nil, requestTime: cacheTime(20), responseTime: cacheTime(20))
            #expect(cache.plan(for: Self.request(at: url), now: cacheTime(25)).kind == .answer(stale: false))
        }

        /// A 304 without `Date` (RFC 9110 §6.6.1: the recipient adds its receipt time): the
        /// freshened response's age counts from the 304, not from the stored `Date`, which made
        /// it stale at once and sent every later request to the server.
        @Test func aNotModifiedWithoutDateFreshensFromItsArrival() throws {
            let cache = try HTTPCache()
            let fields = [(name: "Date", value: cacheHTTPDate(0)), (name: "Cache-Control", value: "max-age=60"),
                          (name: "ETag", value: "\"v1\"")]
            Self.exchange(cache, Self.request(), now: 0, fields: fields)
            #expect(cache.plan(for: Self.request(), now: cacheTime(100)).kind == .revalidate)
            Self.exchange(cache, Self.request(), now: 100, status: 304, fields: [(name: "ETag", value: "\"v1\"")], body: nil)
            #expect(cache.plan(for: Self.request(), now: cacheTime(101)).kind == .answer(stale: false))
            #expect(cache.plan(for: Self.request(), now: cacheTime(161)).kind == .revalidate)
        }

        /// A POST to another spelling of the same URL invalidates what is stored: before, a
        /// POST to `127.1` left the answer stored for `127.0.0.1` fresh.
        @Test func anUnsafeMethodInvalidatesEverySpellingOfItsURL() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(at: "http://127.0.0.1:8080/a"), now: 0, fields: [("Cache-Control", "max-age=60")])
            #expect(cache.plan(for: Self.request(at: "http://127.0.0.1:8080/a"), now: cacheTime(1)).kind == .answer(stale: false))
            Self.exchange(cache, Self.request(at: "http://127.1:8080/a", "POST"), now: 2, status: 201, fields: [])
            #expect(cache.plan(for: Self.request(at: "http://127.0.0.1:8080/a"), now: cacheTime(3)).kind == .network(store: true))
        }

        /// RFC 9111 §4.4: a non-error answer to an unsafe method also invalidates the URLs its
        /// `Location` and `Content-Location` name, on the same origin only (another origin's
        /// entries are not one server's to drop).
        @Test func anUnsafeMethodInvalidatesItsLocationsOnItsOrigin() throws {
            let cache = try HTTPCache()
            let stored = ["https://example.com/items/1", "https://example.com/items/1/view", "https://other.example/items/1"]
            for url in stored {
                Self.exchange(cache, Self.request(at: url), now: 0, fields: [("Cache-Control", "max-age=60")])
            }
            Self.exchange(cache, Self.request(at: "https://example.com/items", "POST"), now: 1, status: 201,
                          fields: [("Location", "/items/1"), ("Content-Location", "https://example.com/items/1/view")])
            #expect(cache.plan(for: Self.request(at: stored[0]), now: cacheTime(2)).kind == .network(store: true))
            #expect(cache.plan(for: Self.request(at: stored[1]), now: cacheTime(2)).kind == .network(store: true))
            // Another origin is left alone, even when named.
            Self.exchange(cache, Self.request(at: "https://example.com/items", "POST"), now: 3, status: 201,
                          fields: [("Location", "https://other.example/items/1")])
            #expect(cache.plan(for: Self.request(at: stored[2]), now: cacheTime(4)).kind == .answer(stale: false))
        }

        @Test func headerNamesAreCaseInsensitive() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0, fields: [("cache-control", "max-age=60"), ("etag", "\"v1\"")])
            let plan = cache.plan(for: Self.request(fields: ["CACHE-CONTROL": "NO-CACHE"]), now: cacheTime(1))
            #expect(plan.conditionalPairs == [["If-None-Match", "\"v1\""]])
        }

        @Test(arguments: [
            (URLRequest.CachePolicy.useProtocolCachePolicy, CachePlanKind.answer(stale: false)),
            (.reloadIgnoringLocalCacheData, .network(store: true)),
            (.reloadIgnoringLocalAndRemoteCacheData, .network(store: true)),
            (.reloadRevalidatingCacheData, .revalidate),
            (.returnCacheDataElseLoad, .answer(stale: false)),
            (.returnCacheDataDontLoad, .answer(stale: false)),
        ])
        func foundationPoliciesOnAFreshEntry(policy: URLRequest.CachePolicy, expected: CachePlanKind) throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0, fields: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")])
            #expect(cache.plan(for: Self.request(policy: policy), now: cacheTime(1)).kind == expected)
        }

        @Test func dontLoadWithNothingStoredIsUnavailable() throws {
            let cache = try HTTPCache()
            #expect(cache.plan(for: Self.request(policy: .returnCacheDataDontLoad), now: cacheEpoch).kind == .unavailable)
            #expect(cache.statistics.misses == 1)
        }

        @Test func staleAnswersAreCounted() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0, fields: [("Cache-Control", "max-age=60")])
            #expect(cache.plan(for: Self.request(policy: .returnCacheDataElseLoad), now: cacheTime(100)).kind == .answer(stale: true))
            #expect(cache.statistics.staleHits == 1)
        }

        @Test func bodyNilIsNotStored() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0, fields: [("Cache-Control", "max-age=60")], body: nil)
            #expect(cache.statistics.stores == 0)
        }

        @Test func removeCachedResponseForURL() throws {
            let cache = try HTTPCache()
            Self.exchange(cache, Self.request(), now: 0, fields: [("Cache-Control", "max-age=60")])
            cache.removeCachedResponse(for: URL(string: "https://example.com/a?b=1")!)
            #expect(cache.plan(for: Self.request(), now: cacheTime(1)).kind == .network(store: true))
            Self.exchange(cache, Self.request(), now: 2, fields: [("Cache-Control", "max-age=60")])
            cache.removeAllCachedResponses()
            #expect(cache.plan(for: Self.request(), now: cacheTime(3)).kind == .network(store: true))
        }

        @Test func diskBackedCacheSurvivesRestart() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let first = try HTTPCache(diskCapacity: 1 << 20, directory: directory)
            Self.exchange(first, Self.request(), now: 0, fields: [("Cache-Control", "max-age=60")])
            let second = try HTTPCache(diskCapacity: 1 << 20, directory: directory)
            #expect(second.plan(for: Self.request(), now: cacheTime(1)).kind == .answer(stale: false))
        }
    }
}
