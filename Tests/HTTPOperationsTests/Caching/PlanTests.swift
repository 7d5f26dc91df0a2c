import Foundation
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct PlanTests {
        /// A response received at cacheEpoch with `Date: cacheEpoch` and the given extra fields.
        static func stored(_ fields: [(name: String, value: String)], requestFields: [(name: String, value: String)] = []) -> CachedResponse {
            makeCachedResponse(fields: [("Date", cacheHTTPDate(0))] + fields, requestFields: requestFields)
        }

        static func plan(
            method: String = "GET", request: [(name: String, value: String)] = [],
            policy: CacheRequestPolicy = .useProtocol, stored: CachedResponse?, now: TimeInterval
        ) -> CachePlan {
            HTTPCachePolicy.plan(method: method, url: cacheTestKey, requestFields: request, policy: policy, stored: stored, now: cacheTime(now))
        }

        struct PlanCase: Sendable, CustomTestStringConvertible {
            var testDescription: String
            var method = "GET"
            var request: [(name: String, value: String)] = []
            var policy: CacheRequestPolicy = .useProtocol
            var stored: CachedResponse?
            var now: TimeInterval
            var expected: CachePlanKind
        }

        static let maxAge100 = stored([("Cache-Control", "max-age=100"), ("ETag", "\"v1\"")])

        static let cases: [PlanCase] = [
            .init(testDescription: "nothing stored", stored: nil, now: 0, expected: .network(store: true)),
            .init(testDescription: "fresh", stored: maxAge100, now: 50, expected: .answer(stale: false)),
            .init(testDescription: "stale with ETag", stored: maxAge100, now: 200, expected: .revalidate),
            .init(testDescription: "stale without validators",
                  stored: stored([("Cache-Control", "max-age=100")]), now: 200, expected: .network(store: true)),
            .init(testDescription: "request no-cache on fresh", request: [("Cache-Control", "no-cache")],
                  stored: maxAge100, now: 50, expected: .revalidate),
            .init(testDescription: "Pragma no-cache on fresh", request: [("Pragma", "no-cache")],
                  stored: maxAge100, now: 50, expected: .revalidate),
            .init(testDescription: "request no-cache without validators", request: [("Cache-Control", "no-cache")],
                  stored: stored([("Cache-Control", "max-age=100")]), now: 50, expected: .network(store: true)),
            .init(testDescription: "response no-cache on fresh",
                  stored: stored([("Cache-Control", "max-age=100, no-cache"), ("ETag", "\"v1\"")]), now: 50, expected: .revalidate),
            .init(testDescription: "must-revalidate beats max-stale", request: [("Cache-Control", "max-stale")],
                  stored: stored([("Cache-Control", "max-age=100, must-revalidate"), ("ETag", "\"v1\"")]), now: 200, expected: .revalidate),
            .init(testDescription: "must-revalidate while fresh", request: [("Cache-Control", "max-stale")],
                  stored: stored([("Cache-Control", "max-age=100, must-revalidate"), ("ETag", "\"v1\"")]), now: 50, expected: .answer(stale: false)),
            .init(testDescription: "max-stale any", request: [("Cache-Control", "max-stale")],
                  stored: maxAge100, now: 10_000, expected: .answer(stale: true)),
            .init(testDescription: "max-stale=150, stale by 100", request: [("Cache-Control", "max-stale=150")],
                  stored: maxAge100, now: 200, expected: .answer(stale: true)),
            .init(testDescription: "max-stale=50, stale by 100", request: [("Cache-Control", "max-stale=50")],
                  stored: maxAge100, now: 200, expected: .revalidate),
            .init(testDescription: "min-fresh=60, 50 left", request: [("Cache-Control", "min-fresh=60")],
                  stored: maxAge100, now: 50, expected: .revalidate),
            .init(testDescription: "min-fresh=10, 50 left", request: [("Cache-Control", "min-fresh=10")],
                  stored: maxAge100, now: 50, expected: .answer(stale: false)),
            .init(testDescription: "request max-age=10, age 50", request: [("Cache-Control", "max-age=10")],
                  stored: maxAge100, now: 50, expected: .revalidate),
            .init(testDescription: "request max-age=60, age 50", request: [("Cache-Control", "max-age=60")],
                  stored: maxAge100, now: 50, expected: .answer(stale: false)),
            .init(testDescription: "only-if-cached, nothing stored", request: [("Cache-Control", "only-if-cached")],
                  stored: nil, now: 0, expected: .unavailable),
            .init(testDescription: "only-if-cached, fresh", request: [("Cache-Control", "only-if-cached")],
                  stored: maxAge100, now: 50, expected: .answer(stale: false)),
            .init(testDescription: "only-if-cached, stale", request: [("Cache-Control", "only-if-cached")],
                  stored: maxAge100, now: 200, expected: .unavailable),
            .init(testDescription: "only-if-cached + max-stale, stale", request: [("Cache-Control", "only-if-cached, max-stale")],
                  stored: maxAge100, now: 200, expected: .answer(stale: true)),
            .init(testDescription: "reload ignores fresh entry", policy: .reloadIgnoringCache,
                  stored: maxAge100, now: 50, expected: .network(store: true)),
            .init(testDescription: "else-load answers stale", policy: .returnCacheDataElseLoad,
                  stored: maxAge100, now: 10_000, expected: .answer(stale: true)),
            .init(testDescription: "else-load answers must-revalidate stale", policy: .returnCacheDataElseLoad,
                  stored: stored([("Cache-Control", "max-age=1, must-revalidate")]), now: 10, expected: .answer(stale: true)),
            .init(testDescription: "else-load with nothing", policy: .returnCacheDataElseLoad,
                  stored: nil, now: 0, expected: .network(store: true)),
            .init(testDescription: "dont-load with nothing", policy: .returnCacheDataDontLoad,
                  stored: nil, now: 0, expected: .unavailable),
            .init(testDescription: "dont-load answers stale", policy: .returnCacheDataDontLoad,
                  stored: maxAge100, now: 10_000, expected: .answer(stale: true)),
            .init(testDescription: "dont-load answers fresh", policy: .returnCacheDataDontLoad,
                  stored: maxAge100, now: 10, expected: .answer(stale: false)),
            .init(testDescription: "user's If-None-Match", request: [("if-none-match", "\"v0\"")],
                  stored: maxAge100, now: 50, expected: .network(store: false)),
            .init(testDescription: "user's If-Modified-Since", request: [("If-Modified-Since", cacheHTTPDate(-5))],
                  stored: maxAge100, now: 50, expected: .network(store: false)),
            .init(testDescription: "user's If-Match", request: [("If-Match", "*")],
                  stored: maxAge100, now: 50, expected: .network(store: false)),
            .init(testDescription: "Range", request: [("Range", "bytes=0-10")],
                  stored: maxAge100, now: 50, expected: .network(store: false)),
            .init(testDescription: "Range under dont-load", request: [("Range", "bytes=0-10")], policy: .returnCacheDataDontLoad,
                  stored: maxAge100, now: 50, expected: .unavailable),
            .init(testDescription: "POST", method: "POST", stored: maxAge100, now: 50, expected: .network(store: false)),
            .init(testDescription: "HEAD", method: "HEAD", stored: maxAge100, now: 50, expected: .network(store: false)),
            .init(testDescription: "entry under another key",
                  stored: makeCachedResponse(key: "GET https://example.com/b", fields: [("Cache-Control", "max-age=100")]),
                  now: 50, expected: .network(store: true)),
        ]

        @Test(arguments: cases)
        func plans(_ testCase: PlanCase) {
            let plan = Self.plan(method: testCase.method, request: testCase.request, policy: testCase.policy,
                                 stored: testCase.stored, now: testCase.now)
            #expect(plan.kind == testCase.expected)
        }

        @Test func revalidationUsesIfNoneMatchForETag() {
            let plan = Self.plan(stored: Self.maxAge100, now: 200)
            #expect(plan.conditionalPairs == [["If-None-Match", "\"v1\""]])
        }

        @Test func revalidationUsesIfModifiedSinceForLastModified() {
            let lastModified = cacheHTTPDate(-1_000)
            let plan = Self.plan(stored: Self.stored([("Cache-Control", "max-age=100"), ("Last-Modified", lastModified)]), now: 200)
            #expect(plan.conditionalPairs == [["If-Modified-Since", lastModified]])
        }

        @Test func revalidationSendsBothValidatorsWhenBothAreStored() {
            // §4.3.1: MUST send the entity tag, SHOULD also send Last-Modified.
            let lastModified = cacheHTTPDate(-1_000)
            let plan = Self.plan(stored: Self.stored([("Cache-Control", "max-age=100"), ("ETag", "W/\"v2\""), ("Last-Modified", lastModified)]), now: 200)
            #expect(plan.conditionalPairs == [["If-None-Match", "W/\"v2\""], ["If-Modified-Since", lastModified]])
        }

        @Test func revalidatePlanCarriesTheStoredResponse() {
            guard case .revalidate(let response, _) = Self.plan(stored: Self.maxAge100, now: 200) else {
                Issue.record("expected revalidate")
                return
            }
            #expect(response == Self.maxAge100)
        }

        struct VaryCase: Sendable, CustomTestStringConvertible {
            var testDescription: String
            var storedRequest: [(name: String, value: String)]
            var newRequest: [(name: String, value: String)]
            var matches: Bool
        }

        static let varyCases: [VaryCase] = [
            .init(testDescription: "same value", storedRequest: [("Accept-Language", "en")],
                  newRequest: [("accept-language", "en")], matches: true),
            .init(testDescription: "different value", storedRequest: [("Accept-Language", "en")],
                  newRequest: [("Accept-Language", "fr")], matches: false),
            .init(testDescription: "absent on both sides", storedRequest: [], newRequest: [], matches: true),
            .init(testDescription: "absent now", storedRequest: [("Accept-Language", "en")], newRequest: [], matches: false),
            .init(testDescription: "absent before", storedRequest: [], newRequest: [("Accept-Language", "en")], matches: false),
            .init(testDescription: "whitespace around commas", storedRequest: [("Accept-Language", " en ,fr,  de ")],
                  newRequest: [("Accept-Language", "en, fr, de")], matches: true),
            .init(testDescription: "repeated lines", storedRequest: [("Accept-Language", "en"), ("Accept-Language", "fr")],
                  newRequest: [("Accept-Language", "en,fr")], matches: true),
            .init(testDescription: "quoted commas are not normalized", storedRequest: [("Accept-Language", "\"a ,b\"")],
                  newRequest: [("Accept-Language", "\"a, b\"")], matches: false),
            .init(testDescription: "unrelated fields ignored", storedRequest: [("Accept-Language", "en"), ("X-A", "1")],
                  newRequest: [("Accept-Language", "en"), ("X-A", "2")], matches: true),
        ]

        @Test(arguments: varyCases)
        func varyMatching(_ testCase: VaryCase) {
            let stored = Self.stored([("Cache-Control", "max-age=100"), ("Vary", "Accept-Language")], requestFields: testCase.storedRequest)
            let plan = Self.plan(request: testCase.newRequest, stored: stored, now: 10)
            #expect(plan.kind == (testCase.matches ? .answer(stale: false) : .network(store: true)))
        }

        @Test func varyMismatchAlsoBlocksReturnCacheData() {
            let stored = Self.stored([("Cache-Control", "max-age=100"), ("Vary", "accept")], requestFields: [("Accept", "text/html")])
            #expect(Self.plan(request: [("Accept", "image/png")], policy: .returnCacheDataElseLoad, stored: stored, now: 10).kind == .network(store: true))
            #expect(Self.plan(request: [("Accept", "image/png")], policy: .returnCacheDataDontLoad, stored: stored, now: 10).kind == .unavailable)
        }

        @Test func varyListsSeveralFields() {
            let stored = Self.stored([("Cache-Control", "max-age=100"), ("Vary", "Accept, Accept-Encoding"), ("Vary", "ACCEPT")],
                                     requestFields: [("Accept", "a"), ("Accept-Encoding", "gzip")])
            #expect(stored.varyingRequestFields.map(\.name) == ["accept", "accept-encoding"])
            #expect(Self.plan(request: [("Accept", "a"), ("Accept-Encoding", "gzip")], stored: stored, now: 10).kind == .answer(stale: false))
            #expect(Self.plan(request: [("Accept", "a")], stored: stored, now: 10).kind == .network(store: true))
        }
    }
}
