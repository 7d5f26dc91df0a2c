import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import HTTPOperations

extension AllTests {
    /// More than one stored response per URL (RFC 9111 §4.1: "a cache MAY store multiple
    /// responses for a request URI"): one per `Vary` selection and per identity, so that two
    /// languages, or two users of a server's manager, do not evict each other's answer.
    @Suite struct VariantTests {
        static let url = URL(string: "https://example.com/menu")!

        static func request(_ fields: [String: String]) -> URLRequest {
            var request = URLRequest(url: url)
            for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
            return request
        }

        /// Plans a request and, on a miss, stores the given answer.
        static func fetch(_ cache: HTTPCache, _ fields: [String: String], answer body: String,
                          responseFields: [(name: String, value: String)], now: TimeInterval = 0,
                          policy: URLRequest.CachePolicy = .useProtocolCachePolicy) -> CachePlan {
            var request = Self.request(fields)
            request.cachePolicy = policy
            let plan = cache.plan(for: request, now: cacheTime(now))
            if case .network = plan {
                _ = cache.responseArrived(for: request, plan: plan, status: 200, fields: responseFields,
                                          body: Data(body.utf8), requestTime: cacheTime(now), responseTime: cacheTime(now))
            }
            return plan
        }

        static func answeredBody(_ plan: CachePlan) -> String? {
            guard case .answer(let response, stale: false) = plan else { return nil }
            return String(decoding: response.body, as: UTF8.self)
        }

        static let byLanguage: [(name: String, value: String)] =
            [("Date", cacheHTTPDate(0)), ("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")]

        @Test func twoLanguagesAreBothKept() throws {
            let cache = try HTTPCache()
            _ = Self.fetch(cache, ["Accept-Language": "en"], answer: "menu in en", responseFields: Self.byLanguage)
            _ = Self.fetch(cache, ["Accept-Language": "fr"], answer: "menu in fr", responseFields: Self.byLanguage)
            for round in 1...3 {
                #expect(Self.answeredBody(cache.plan(for: Self.request(["Accept-Language": "en"]), now: cacheTime(Double(round)))) == "menu in en")
                #expect(Self.answeredBody(cache.plan(for: Self.request(["Accept-Language": "fr"]), now: cacheTime(Double(round)))) == "menu in fr")
            }
            // A third selection is a miss, and answers for the others still stand.
            #expect(cache.plan(for: Self.request(["Accept-Language": "de"]), now: cacheTime(5)).kind == .network(store: true))
            #expect(cache.statistics.hits == 6)
        }

        @Test func twoUsersAreBothKept() throws {
            let cache = try HTTPCache()
            let fields: [(name: String, value: String)] = [("Date", cacheHTTPDate(0)), ("Cache-Control", "private, max-age=600")]
            _ = Self.fetch(cache, ["Cookie": "session=alice"], answer: "alice's page", responseFields: fields)
            _ = Self.fetch(cache, ["Cookie": "session=bob"], answer: "bob's page", responseFields: fields)
            _ = Self.fetch(cache, [:], answer: "the public page", responseFields: fields)
            #expect(Self.answeredBody(cache.plan(for: Self.request(["Cookie": "session=alice"]), now: cacheTime(1))) == "alice's page")
            #expect(Self.answeredBody(cache.plan(for: Self.request(["Cookie": "session=bob"]), now: cacheTime(1))) == "bob's page")
            #expect(Self.answeredBody(cache.plan(for: Self.request([:]), now: cacheTime(1))) == "the public page")
            #expect(cache.plan(for: Self.request(["Cookie": "session=carol"]), now: cacheTime(1)).kind == .network(store: true))
        }

        @Test func anUnsafeMethodInvalidatesEveryVariant() throws {
            let cache = try HTTPCache()
            _ = Self.fetch(cache, ["Accept-Language": "en"], answer: "menu in en", responseFields: Self.byLanguage)
            _ = Self.fetch(cache, ["Accept-Language": "fr", "Authorization": "Bearer x"], answer: "menu in fr", responseFields: Self.byLanguage)
            var post = Self.request([:])
            post.httpMethod = "POST"
            _ = cache.responseArrived(for: post, plan: cache.plan(for: post, now: cacheTime(1)), status: 200, fields: [],
                                      body: Data(), requestTime: cacheTime(1), responseTime: cacheTime(1))
            #expect(cache.plan(for: Self.request(["Accept-Language": "en"]), now: cacheTime(2)).kind == .network(store: true))
            #expect(cache.plan(for: Self.request(["Accept-Language": "fr", "Authorization": "Bearer x"]), now: cacheTime(2)).kind == .network(store: true))
            cache.removeAllCachedResponses()
            _ = Self.fetch(cache, ["Accept-Language": "en"], answer: "menu in en", responseFields: Self.byLanguage)
            _ = Self.fetch(cache, ["Accept-Language": "fr"], answer: "menu in fr", responseFields: Self.byLanguage)
            cache.removeCachedResponse(for: Self.url)
            #expect(cache.plan(for: Self.request(["Accept-Language": "fr"]), now: cacheTime(2)).kind == .network(store: true))
            #expect(cache.storage.memoryUsage == 0)
        }

        @Test func aVariantReplacesOnlyItsOwnSelection() throws {
            let cache = try HTTPCache()
            _ = Self.fetch(cache, ["Accept-Language": "en"], answer: "menu in en", responseFields: Self.byLanguage)
            _ = Self.fetch(cache, ["Accept-Language": "fr"], answer: "menu in fr", responseFields: Self.byLanguage)
            // A reload of the English menu replaces the English answer only.
            var reload = Self.request(["Accept-Language": "en"])
            reload.cachePolicy = .reloadIgnoringLocalCacheData
            let plan = cache.plan(for: reload, now: cacheTime(1))
            _ = cache.responseArrived(for: reload, plan: plan, status: 200, fields: Self.byLanguage, body: Data("new menu in en".utf8),
                                      requestTime: cacheTime(1), responseTime: cacheTime(1))
            #expect(Self.answeredBody(cache.plan(for: Self.request(["Accept-Language": "en"]), now: cacheTime(2))) == "new menu in en")
            #expect(Self.answeredBody(cache.plan(for: Self.request(["Accept-Language": "fr"]), now: cacheTime(2))) == "menu in fr")
        }

        /// The disk tier keeps each selection in its own file and finds them after a restart,
        /// when nothing in memory says which fields the URL varies on.
        @Test func variantsOnDiskAreFoundAfterARestart() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                let cache = try HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
                for language in ["en", "fr", "de"] {
                    _ = Self.fetch(cache, ["Accept-Language": language], answer: "menu in \(language)", responseFields: Self.byLanguage)
                }
            }
            #expect(try cacheEntryFiles(in: directory).count == 3)
            let reopened = try HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
            for language in ["fr", "de", "en", "fr"] {
                #expect(Self.answeredBody(reopened.plan(for: Self.request(["Accept-Language": language]), now: cacheTime(1))) == "menu in \(language)")
            }
            #expect(reopened.plan(for: Self.request(["Accept-Language": "it"]), now: cacheTime(1)).kind == .network(store: true))
            reopened.removeCachedResponse(for: Self.url)
            #expect(try cacheEntryFiles(in: directory).isEmpty)
        }

        /// A response that varies on nothing and one that varies (the server began sending
        /// `Vary`, or answers without it for requests without the field) are both found after a
        /// restart, whichever was stored last. (Loaded with a reload: a fresh plain response
        /// would be the answer to the other request too.)
        @Test(arguments: [false, true])
        func aPlainAndAVaryingResponseAreBothFoundAfterARestart(varyingLast: Bool) throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let plain: [(name: String, value: String)] = [("Date", cacheHTTPDate(0)), ("Cache-Control", "max-age=600")]
            do {
                let cache = try HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
                let steps: [() -> Void] = [
                    { _ = Self.fetch(cache, [:], answer: "the plain menu", responseFields: plain, policy: .reloadIgnoringLocalCacheData) },
                    { _ = Self.fetch(cache, ["Accept-Language": "en"], answer: "menu in en", responseFields: Self.byLanguage,
                                     policy: .reloadIgnoringLocalCacheData) },
                ]
                for step in varyingLast ? steps : steps.reversed() { step() }
            }
            #expect(try cacheEntryFiles(in: directory).count == 2)
            let reopened = try HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
            #expect(Self.answeredBody(reopened.plan(for: Self.request(["Accept-Language": "en"]), now: cacheTime(1))) == "menu in en")
            #expect(Self.answeredBody(reopened.plan(for: Self.request([:]), now: cacheTime(1))) == "the plain menu")
        }

        /// A 304 whose validator contradicts one variant drops that variant, not its siblings.
        @Test func aContradictingNotModifiedDropsOneVariant() throws {
            let cache = try HTTPCache()
            let stale: [(name: String, value: String)] =
                [("Date", cacheHTTPDate(0)), ("Cache-Control", "max-age=0"), ("Vary", "Accept-Language"), ("ETag", "\"1\"")]
            _ = Self.fetch(cache, ["Accept-Language": "en"], answer: "menu in en", responseFields: stale)
            _ = Self.fetch(cache, ["Accept-Language": "fr"], answer: "menu in fr", responseFields: stale)
            let english = Self.request(["Accept-Language": "en"])
            let plan = cache.plan(for: english, now: cacheTime(1))
            #expect(plan.kind == .revalidate)
            _ = cache.responseArrived(for: english, plan: plan, status: 304, fields: [("ETag", "\"2\"")], body: nil,
                                      requestTime: cacheTime(1), responseTime: cacheTime(1))
            #expect(cache.plan(for: english, now: cacheTime(2)).kind == .network(store: true))
            #expect(cache.plan(for: Self.request(["Accept-Language": "fr"]), now: cacheTime(2)).kind == .revalidate)
        }
    }
}
