import Foundation
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct CacheControlTests {
        @Test func parsesCommonDirectives() {
            let directives = CacheControl(fields: [("Cache-Control", "public, max-age=60, s-maxage=120, must-revalidate, immutable")])
            #expect(directives.isPublic)
            #expect(directives.maxAge == 60)
            #expect(directives.sharedMaxAge == 120)
            #expect(directives.mustRevalidate)
            #expect(directives.immutable)
            #expect(!directives.noCache)
            #expect(!directives.noStore)
        }

        @Test func namesAreCaseInsensitiveAndFieldsCombine() {
            let directives = CacheControl(fields: [
                ("CACHE-CONTROL", "No-Store"),
                ("Content-Type", "text/plain"),
                ("cache-control", "MAX-AGE=5, Private"),
            ])
            #expect(directives.noStore)
            #expect(directives.maxAge == 5)
            #expect(directives.isPrivate)
        }

        @Test func quotedValuesKeepTheirCommas() {
            let directives = CacheControl(fields: [("Cache-Control", #"no-cache="Set-Cookie, X-Foo", max-age="30", ext="a,\"b,c", no-store"#)])
            #expect(directives.noCache)
            #expect(directives.maxAge == 30)
            #expect(directives.noStore)
            #expect(!directives.isPrivate)
        }

        @Test(arguments: [
            ("max-age=abc, max-age=7", 0),
            ("max-age=-1, max-age=8", 0),
            ("max-age=9, max-age=3", 9),
            // §1.2.2 and §4.2.1: an invalid first max-age makes the response stale (0),
            // whatever follows.
            ("max-age=, max-age=4", 0),
            ("max-age=1.5, max-age = 2", 0),
            ("max-age=99999999999999999999", 2_147_483_648),
            // §5.2: no space around "=" (issue 38: both were read as 3600).
            ("max-age= 3600", 0),
            ("max-age =3600", 0),
            ("max-age=\t3600", 0),
        ])
        func theFirstMaxAgeDecides(value: String, expected: Int) {
            #expect(CacheControl(fields: [("Cache-Control", value)]).maxAge == expected)
        }

        @Test func invalidNumbersAreIgnored() {
            let directives = CacheControl(fields: [("Cache-Control", "max-age=soon, min-fresh=x, max-stale=later")])
            #expect(directives.maxAge == 0, "an invalid max-age is stale")
            #expect(directives.minFresh == nil)
            #expect(directives.maxStale == nil)
        }

        @Test func maxStaleWithAndWithoutValue() {
            #expect(CacheControl(fields: [("Cache-Control", "max-stale")]).maxStale == .any)
            #expect(CacheControl(fields: [("Cache-Control", "max-stale=30")]).maxStale == .seconds(30))
            #expect(CacheControl(fields: [("Cache-Control", "max-stale=30, max-stale")]).maxStale == .seconds(30))
        }

        @Test func requestDirectives() {
            let directives = CacheControl(fields: [("Cache-Control", "only-if-cached, min-fresh=10")])
            #expect(directives.onlyIfCached)
            #expect(directives.minFresh == 10)
        }

        @Test func pragmaNoCacheCountsOnlyWithoutCacheControl() {
            #expect(CacheControl.request(fields: [("Pragma", "no-cache")]).noCache)
            #expect(CacheControl.request(fields: [("pragma", "foo, No-Cache")]).noCache)
            #expect(!CacheControl.request(fields: [("Pragma", "no-cache"), ("Cache-Control", "max-age=5")]).noCache)
            // Pragma is a request mechanism only (§5.4); the plain initializer ignores it.
            #expect(!CacheControl(fields: [("Pragma", "no-cache")]).noCache)
        }

        @Test func emptyAndMissingFields() {
            #expect(CacheControl(fields: []) == CacheControl(fields: [("Cache-Control", " , ,")]))
        }
    }
}
