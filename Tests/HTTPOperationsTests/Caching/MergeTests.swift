import Foundation
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct MergeTests {
        static let stored = makeCachedResponse(
            fields: [
                ("Date", cacheHTTPDate(0)), ("Cache-Control", "max-age=60"), ("ETag", "\"v1\""),
                ("Content-Length", "5"), ("Content-Encoding", "gzip"), ("X-Multi", "a"),
                ("X-Old", "kept"), ("x-multi", "b"),
            ],
            requestFields: [], requestTime: cacheTime(0), responseTime: cacheTime(1))

        @Test func notModifiedFieldsReplaceStoredOnes() {
            let merged = HTTPCachePolicy.merge(
                stored: Self.stored,
                notModifiedFields: [
                    ("Date", cacheHTTPDate(500)), ("cache-control", "max-age=120"), ("Content-Length", "0"),
                    ("Content-Encoding", "identity"), ("X-Multi", "c"), ("Connection", "close, X-Hop"),
                    ("X-Hop", "1"), ("Keep-Alive", "timeout=5"), ("X-New", "n"),
                ],
                requestTime: cacheTime(499), responseTime: cacheTime(501))
            let pairs = merged.headerFields.map { [$0.name, $0.value] }
            #expect(pairs == [
                ["ETag", "\"v1\""], ["Content-Length", "5"], ["Content-Encoding", "gzip"], ["X-Old", "kept"],
                ["Date", cacheHTTPDate(500)], ["cache-control", "max-age=120"], ["X-Multi", "c"], ["X-New", "n"],
            ])
            #expect(merged.requestTime == cacheTime(499))
            #expect(merged.responseTime == cacheTime(501))
            #expect(merged.body == Self.stored.body)
            #expect(merged.status == 200)
            #expect(merged.key == Self.stored.key)
            // Fresh again: max-age 120; age 2 (response delay 2 beats apparent age 1, no resident time yet).
            #expect(merged.currentAge(now: cacheTime(501)) == 2)
            #expect(merged.isFresh(now: cacheTime(600)))
        }

        @Test func notModifiedMustMatchTheStoredETag() {
            #expect(HTTPCachePolicy.notModifiedMatches(stored: Self.stored, notModifiedFields: [("ETag", "\"v1\"")]))
            #expect(HTTPCachePolicy.notModifiedMatches(stored: Self.stored, notModifiedFields: [("ETag", "W/\"v1\"")]))
            #expect(HTTPCachePolicy.notModifiedMatches(stored: Self.stored, notModifiedFields: []))
            #expect(!HTTPCachePolicy.notModifiedMatches(stored: Self.stored, notModifiedFields: [("etag", "\"v2\"")]))
        }
    }
}
