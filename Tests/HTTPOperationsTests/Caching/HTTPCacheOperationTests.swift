import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTypes
import MetricsTestKit
import Testing

extension AllTests {
    /// The HTTP cache (issue 26, item 6) through real requests to the test server: what is
    /// answered without a request, what is revalidated and how, what is never stored, each
    /// `cachePolicy`, `Vary`, credentials, invalidation, the disk tier across a restart, both
    /// doors, and the metrics. The server counts every request, so "answered from the
    /// cache" is checked on the wire, not taken from the cache's own word.
    @Suite struct HTTPCacheOperations {
        /// A fresh key per test, so counts never mix.
        static func key(_ name: String) -> String { "\(name)-\(UUID().uuidString.prefix(8))" }

        /// A manager whose operations share `cache` and collect bodies as `Data`.
        static func manager(_ cache: HTTPCache?) -> HTTPRequestOperationManager {
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            manager.defaultConfiguration.cache = cache
            return manager
        }

        /// Runs a GET of `url` on `manager` and returns the operation once finished.
        @discardableResult
        static func get(_ url: URL, on manager: HTTPRequestOperationManager, policy: URLRequest.CachePolicy = .useProtocolCachePolicy,
                        headers: [String: String] = [:], method: String = "GET") async throws -> HTTPRequestOperation {
            var request = URLRequest(url: url, cachePolicy: policy)
            request.httpMethod = method
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            let operation = manager.httpRequestOperation(with: request, success: nil, failure: nil)
            manager.enqueue(operation)
            try await waitUntilFinished(operation)
            return operation
        }

        static func body(_ operation: HTTPRequestOperation) -> String {
            String(decoding: operation.responseData ?? Data(), as: UTF8.self)
        }

        @Test func aFreshResponseIsTheAnswerWithoutARequest() async throws {
            let cache = try HTTPCache()
            let manager = Self.manager(cache)
            let key = Self.key("fresh")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
            let first = try await Self.get(url, on: manager)
            let second = try await Self.get(url, on: manager)
            #expect(first.error == nil && second.error == nil, "\(String(describing: second.error))")
            #expect(Self.body(second) == "\(key) version 0")
            #expect(second.response?.statusCode == 200)
            #expect(second.response?.value(forHTTPHeaderField: "Age") != nil)
            #expect(testServer.requestCount(forResumableKey: key) == 1)
            #expect(second.cacheResult == .hit)
            #expect(cache.statistics.hits == 1 && cache.statistics.stores == 1)
        }

        /// A 304 that contradicts one stored variant drops that variant only: the other
        /// languages' answers are still revalidated, not loaded again.
        @Test func aContradictingNotModifiedDropsOnlyItsVariant() async throws {
            let cache = try HTTPCache()
            let manager = Self.manager(cache)
            let key = Self.key("contradicted")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=0", etag: true, vary: "X-Lang"))
            try await Self.get(url, on: manager, headers: ["X-Lang": "en"])
            try await Self.get(url, on: manager, headers: ["X-Lang": "fr"])
            let contradicted = try await Self.get(url, on: manager, headers: ["X-Lang": "en", "X-Contradict": "1"])
            #expect((contradicted.error as? URLError)?.code == .badServerResponse)
            let french = try await Self.get(url, on: manager, headers: ["X-Lang": "fr"])
            #expect(french.cacheResult == .revalidated)
            #expect(Self.body(french) == "\(key) version 0 for fr")
            let english = try await Self.get(url, on: manager, headers: ["X-Lang": "en"])
            #expect(english.cacheResult != .revalidated)
            #expect(Self.body(english) == "\(key) version 0 for en")
        }

        @Test func aStaleResponseIsRevalidatedWithItsETagAndA304IsTheStoredAnswer() async throws {
            let cache = try HTTPCache()
            let manager = Self.manager(cache)
            let key = Self.key("etag")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=0", etag: true))
            try await Self.get(url, on: manager)
            let second = try await Self.get(url, on: manager)
            // The server saw the If-None-Match and said 304; the operation answers 200 with the body.
            #expect(testServer.requestCount(forResumableKey: key) == 2)
            #expect(testServer.requestCount(forResumableKey: key + "#304") == 1)
            #expect(second.error == nil, "\(String(describing: second.error))")
            #expect(second.response?.statusCode == 200)
            #expect(second.response?.value(forHTTPHeaderField: "ETag") == "\"v0\"")
            #expect(Self.body(second) == "\(key) version 0")
            #expect(second.cacheResult == .revalidated)
            #expect(cache.statistics.revalidations == 1)
        }

        @Test func lastModifiedRevalidatesWhenThereIsNoETag() async throws {
            let manager = Self.manager(try HTTPCache())
            let key = Self.key("lastmod")
            let url = testServer.url(.cacheable(key: key, cacheControl: "no-cache", lastModified: true))
            try await Self.get(url, on: manager)
            let second = try await Self.get(url, on: manager)
            #expect(testServer.requestCount(forResumableKey: key + "#304") == 1)
            #expect(Self.body(second) == "\(key) version 0")
            #expect(second.cacheResult == .revalidated)
        }

        @Test func aChangedResourceReplacesTheStoredOne() async throws {
            let manager = Self.manager(try HTTPCache())
            let key = Self.key("changed")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=0", etag: true))
            try await Self.get(url, on: manager)
            testServer.changeCacheable(key)
            let second = try await Self.get(url, on: manager)
            #expect(Self.body(second) == "\(key) version 1")
            #expect(second.cacheResult == .miss)
            let third = try await Self.get(url, on: manager)
            #expect(Self.body(third) == "\(key) version 1")
            #expect(third.cacheResult == .revalidated)
            #expect(testServer.requestCount(forResumableKey: key + "#304") == 1)
        }

        @Test(arguments: ["no-store", "max-age=600, no-store"])
        func noStoreIsNeverStored(cacheControl: String) async throws {
            let cache = try HTTPCache()
            let manager = Self.manager(cache)
            let key = Self.key("nostore")
            let url = testServer.url(.cacheable(key: key, cacheControl: cacheControl, etag: true))
            try await Self.get(url, on: manager)
            let second = try await Self.get(url, on: manager)
            #expect(testServer.requestCount(forResumableKey: key) == 2)
            #expect(testServer.requestCount(forResumableKey: key + "#304") == 0)
            #expect(second.cacheResult == .miss)
            #expect(cache.statistics.stores == 0)
        }

        @Test func varySelectsByTheRequestsField() async throws {
            let manager = Self.manager(try HTTPCache())
            let key = Self.key("vary")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=600", vary: "X-Lang"))
            let english = try await Self.get(url, on: manager, headers: ["X-Lang": "en"])
            let french = try await Self.get(url, on: manager, headers: ["X-Lang": "fr"])
            let frenchAgain = try await Self.get(url, on: manager, headers: ["X-Lang": "fr"])
            #expect(Self.body(english) == "\(key) version 0 for en")
            #expect(Self.body(french) == "\(key) version 0 for fr")
            #expect(Self.body(frenchAgain) == "\(key) version 0 for fr")
            // One stored response per URL: the French one replaced the English one.
            #expect(testServer.requestCount(forResumableKey: key) == 2)
            #expect(frenchAgain.cacheResult == .hit)
        }

        @Test func aResponseForOneCredentialIsNeverTheAnswerForAnother() async throws {
            let manager = Self.manager(try HTTPCache())
            let key = Self.key("credential")
            let url = testServer.url(.cacheable(key: key, cacheControl: "private, max-age=600"))
            try await Self.get(url, on: manager, headers: ["Authorization": "Bearer alice"])
            let bob = try await Self.get(url, on: manager, headers: ["Authorization": "Bearer bob"])
            let anonymous = try await Self.get(url, on: manager)
            #expect(bob.cacheResult == .miss && anonymous.cacheResult == .miss)
            #expect(testServer.requestCount(forResumableKey: key) == 3)
            let anonymousAgain = try await Self.get(url, on: manager)
            #expect(anonymousAgain.cacheResult == .hit)
        }

        @Test func eachCachePolicyIsHonoured() async throws {
            let cache = try HTTPCache()
            let manager = Self.manager(cache)
            let key = Self.key("policies")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=0", etag: true))
            // Nothing stored: "don't load" fails without a request.
            let refused = try await Self.get(url, on: manager, policy: .returnCacheDataDontLoad)
            #expect((refused.error as? URLError)?.code == .resourceUnavailable, "\(String(describing: refused.error))")
            #expect(testServer.requestCount(forResumableKey: key) == 0)
            try await Self.get(url, on: manager)
            // Stale, but these two policies take any stored response.
            let elseLoad = try await Self.get(url, on: manager, policy: .returnCacheDataElseLoad)
            let dontLoad = try await Self.get(url, on: manager, policy: .returnCacheDataDontLoad)
            #expect(elseLoad.cacheResult == .staleHit && dontLoad.cacheResult == .staleHit)
            #expect(Self.body(dontLoad) == "\(key) version 0")
            #expect(testServer.requestCount(forResumableKey: key) == 1)
            // Reloading ignores what is stored: a full request, no validator sent.
            testServer.changeCacheable(key)
            let reloaded = try await Self.get(url, on: manager, policy: .reloadIgnoringLocalCacheData)
            #expect(Self.body(reloaded) == "\(key) version 1")
            #expect(testServer.requestCount(forResumableKey: key + "#304") == 0)
            // ... and stores the answer: the protocol's policy revalidates that one.
            let revalidated = try await Self.get(url, on: manager)
            #expect(revalidated.cacheResult == .revalidated)
            #expect(Self.body(revalidated) == "\(key) version 1")
        }

        @Test func anUnsafeMethodInvalidatesTheStoredResponse() async throws {
            let cache = try HTTPCache()
            let manager = Self.manager(cache)
            let key = Self.key("invalidate")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
            try await Self.get(url, on: manager)
            try await Self.get(url, on: manager, method: "POST")
            let after = try await Self.get(url, on: manager)
            #expect(after.cacheResult == .miss)
            #expect(testServer.requestCount(forResumableKey: key) == 3)
            #expect(cache.statistics.invalidations == 1)
        }

        @Test func theDiskTierAnswersAfterARestart() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpcache-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let key = Self.key("disk")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
            try await Self.get(url, on: Self.manager(try HTTPCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)))
            // A new cache over the same folder, as a new process would make.
            let restarted = try await Self.get(url, on: Self.manager(try HTTPCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)))
            #expect(restarted.cacheResult == .hit)
            #expect(Self.body(restarted) == "\(key) version 0")
            #expect(testServer.requestCount(forResumableKey: key) == 1)
        }

        @Test func aDownloadToAFileBypassesTheCache() async throws {
            let cache = try HTTPCache()
            let manager = Self.manager(cache)
            let key = Self.key("file")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
            for _ in 0..<2 {
                let file = temporaryFile()
                defer { removeDownload(file) }
                let operation = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
                operation.destinationURL = file
                manager.enqueue(operation)
                try await waitUntilFinished(operation)
                #expect(operation.error == nil)
                #expect(try String(contentsOf: file, encoding: .utf8) == "\(key) version 0")
            }
            #expect(testServer.requestCount(forResumableKey: key) == 2)
            #expect(cache.statistics.stores == 0)
        }

        @Test func withoutACacheEveryRequestIsSent() async throws {
            let manager = Self.manager(nil)
            #expect(HTTPRequestOperationManager().defaultConfiguration.cache == nil)
            let key = Self.key("none")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
            try await Self.get(url, on: manager)
            let second = try await Self.get(url, on: manager)
            #expect(second.cacheResult == nil)
            #expect(testServer.requestCount(forResumableKey: key) == 2)
        }

        @Test func theHTTPTypesDoorRevalidatesThroughTheSameCache() async throws {
            let manager = Self.manager(try HTTPCache())
            let key = Self.key("door")
            let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=0", etag: true))
            _ = try await manager.perform(HTTPRequest(method: .get, url: url))
            let (response, body) = try await manager.perform(HTTPRequest(method: .get, url: url))
            // The door answers every status: it is the stored 200, not the server's 304.
            #expect(response.status == .ok)
            #expect(response.headerFields[.eTag] == "\"v0\"")
            #expect(String(decoding: body, as: UTF8.self) == "\(key) version 0")
            #expect(testServer.requestCount(forResumableKey: key + "#304") == 1)
        }

        @Test func lookupsAreCountedInTheMetrics() async throws {
            let metrics = TestMetrics()
            let manager = Self.manager(try HTTPCache())
            manager.defaultConfiguration.metricsFactory = metrics
            let key = Self.key("metrics")
            let fresh = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
            let stale = testServer.url(.cacheable(key: key, cacheControl: "max-age=0", etag: true))
            try await Self.get(fresh, on: manager)   // miss
            try await Self.get(fresh, on: manager)   // hit
            try await Self.get(stale, on: manager)   // miss (another URL)
            try await Self.get(stale, on: manager)   // revalidated
            func count(_ result: String) -> Int64 {
                metrics.counterTotal(label: RequestMetrics.Label.cache, dimensions: [("result", result)])
            }
            #expect(count("miss") == 2)
            #expect(count("hit") == 1)
            #expect(count("revalidated") == 1)
            #expect(count("stale_hit") == 0)
        }
    }
}
