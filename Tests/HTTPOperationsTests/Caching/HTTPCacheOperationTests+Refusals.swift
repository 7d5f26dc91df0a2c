import Crypto
import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Synchronization
import Testing

extension AllTests.HTTPCacheOperations {
    // MARK: - What the cache must not store or serve (each test failed before its fix)

    /// A redirected answer is the redirect target's: stored under the request's URL it would
    /// be the answer for that URL for as long as it is fresh, whatever the redirect says then.
    @Test func aRedirectedAnswerIsNotStoredUnderTheRequestsURL() async throws {
        let manager = Self.manager(try HTTPCache())
        let key = Self.key("redirected")
        let target = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
        let url = testServer.url(.redirectTo(target.absoluteString, status: 302))
        let first = try await Self.get(url, on: manager)
        let second = try await Self.get(url, on: manager)
        #expect(first.error == nil && second.error == nil)
        #expect(second.cacheResult != .hit)
        #expect(testServer.requestCount(forResumableKey: key) == 2)
        #expect(second.response?.url == first.response?.url)
    }

    /// An operation's `maximumBodySize` holds for an answer from the cache as for one from the
    /// network: a stored body over the limit fails the operation with `.bodyTooLarge`, as
    /// that body from the server would (it was handed over whole). Nothing is sent for it.
    @Test func aStoredBodyOverTheOperationsLimitFailsAsTheNetworksWould() async throws {
        let manager = Self.manager(try HTTPCache())
        let key = Self.key("limit")
        let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
        let stored = try await Self.get(url, on: manager)
        let length = try #require(stored.responseData?.count)
        let limited = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
        limited.maximumBodySize = Int64(length - 1)
        manager.enqueue(limited)
        try await waitUntilFinished(limited)
        #expect((limited.error as? TransferError)?.code == .bodyTooLarge, "\(String(describing: limited.error))")
        #expect(limited.responseData == nil || limited.responseData?.isEmpty == true)
        #expect(testServer.requestCount(forResumableKey: key) == 1)
        // Within the limit, the stored answer is given.
        #expect(try await Self.get(url, on: manager).cacheResult == .hit)
    }

    /// A credential the challenge block gives during the exchange is not known when the
    /// cache is asked: such an operation neither stores nor is answered from the cache.
    @Test func anAnswerForAChallengeBlocksCredentialIsNotStored() async throws {
        let manager = Self.manager(try HTTPCache())
        let url = testServer.url(.basicAuth(user: "alice", password: "pw"))
        let withAlice = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
        withAlice.setAuthenticationChallengeBlock { _, _ in URLCredential(user: "alice", password: "pw", persistence: .none) }
        manager.enqueue(withAlice)
        try await waitUntilFinished(withAlice)
        #expect(withAlice.error == nil, "\(String(describing: withAlice.error))")
        let anonymous = try await Self.get(url, on: manager, policy: .returnCacheDataElseLoad)
        #expect(anonymous.response?.statusCode == 401, "Alice's answer was given to an anonymous request: \(Self.body(anonymous))")
    }

    /// No credential is written to the disk tier, not even as a digest (a SHA-256 of
    /// `Basic` alice:hunter2 fell to a four-word dictionary): a response to a request with
    /// `Authorization`, the URL's `user:password@`, a `Cookie` or a partition stays in memory;
    /// one that speaks for nobody is written, without its `Set-Cookie`.
    @Test func noCredentialReachesTheDisk() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpcache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let manager = Self.manager(try HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory))
        let varying = testServer.url(.cacheable(key: Self.key("vary-auth"), cacheControl: "max-age=600", vary: "Authorization"))
        try await Self.get(varying, on: manager, headers: ["Authorization": "Bearer tok-123"])
        var components = URLComponents(url: testServer.url(.cacheable(key: Self.key("userinfo"), cacheControl: "max-age=600")),
                                       resolvingAgainstBaseURL: false)!
        components.user = "alice"
        components.password = "s3cret"
        try await Self.get(components.url!, on: manager)
        try await Self.get(testServer.url(.cacheable(key: Self.key("cookie"), cacheControl: "max-age=600")), on: manager,
                           headers: ["Cookie": "session=alice"])
        // A field named sensitive (an API key) is an identity too: not even its digest, which a
        // `Vary` naming it would write, reaches the folder.
        manager.defaultConfiguration.sensitiveHeaderFields = ["x-api-key"]
        try await Self.get(testServer.url(.cacheable(key: Self.key("api-key"), cacheControl: "max-age=600", vary: "X-Api-Key")),
                           on: manager, headers: ["X-Api-Key": "key-123"])
        manager.defaultConfiguration.sensitiveHeaderFields = []
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        try await Self.get(testServer.url(.cacheable(key: Self.key("nobody"), cacheControl: "max-age=600")), on: manager)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.count == 1)
        for file in files {
            // The route's body names the value it varied on: only the rest is the cache's.
            let text = String(decoding: try Data(contentsOf: directory.appendingPathComponent(file)), as: UTF8.self)
                .replacingOccurrences(of: " for Bearer tok-123", with: "")
            #expect(!text.contains("tok-123") && !text.contains("s3cret"), "\(file): \(text)")
        }
        // And in memory the digest still tells one credential from another.
        let again = try await Self.get(varying, on: manager, headers: ["Authorization": "Bearer tok-123"])
        let other = try await Self.get(varying, on: manager, headers: ["Authorization": "Bearer tok-456"])
        #expect(again.cacheResult == .hit && other.cacheResult == .miss)
    }

    /// `Vary: Cookie` with cookies from a cookie store (added by curl, unseen in the request):
    /// the answer for one store is never the answer for another.
    @Test func varyCookieNeverCrossesCookieStores() async throws {
        let cache = try HTTPCache()
        let key = Self.key("vary-cookie")
        let url = testServer.url(.cacheable(key: key, cacheControl: "private, max-age=600", vary: "Cookie"))
        var bodies: [String] = []
        for user in ["alice", "bob"] {
            let file = temporaryFile()
            defer { try? FileManager.default.removeItem(at: file) }
            try "127.0.0.1\tFALSE\t/\tFALSE\t0\tuser\t\(user)\n".write(to: file, atomically: true, encoding: .utf8)
            let manager = Self.manager(cache)
            manager.defaultConfiguration.cookieStore = CookieStore(persistingTo: file)
            bodies.append(Self.body(try await Self.get(url, on: manager)))
        }
        #expect(bodies == ["\(key) version 0 for user=alice", "\(key) version 0 for user=bob"])
        #expect(testServer.requestCount(forResumableKey: key) == 2)
    }

    /// A body that must pass an integrity check is never answered from, nor stored in, the
    /// cache: a wrong body failed its check once and was then a success from the cache.
    @Test func anIntegrityCheckedBodyBypassesTheCache() async throws {
        let cache = try HTTPCache()
        let manager = Self.manager(cache)
        let key = Self.key("integrity")
        let url = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
        for _ in 0..<2 {
            let operation = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
            operation.expectedSHA256 = String(repeating: "0", count: 64)
            manager.enqueue(operation)
            try await waitUntilFinished(operation)
            #expect(operation.error is IntegrityError, "\(String(describing: operation.error))")
        }
        #expect(testServer.requestCount(forResumableKey: key) == 2)
        #expect(cache.statistics.stores == 0)
    }

    /// A 304 that names another version than the one stored answers a condition the caller
    /// never set: a typed failure, the stored response dropped, and the next request loads.
    @Test func a304ForAnotherVersionIsATypedFailure() async throws {
        // The second request (the cache's revalidation) gets a 304 naming version "b".
        let requests = Atomic<Int>(0)
        let server = faultServer { _ in
            let body = "version a"
            if requests.add(1, ordering: .relaxed).newValue == 2 {
                return [.send(Array("HTTP/1.1 304 Not Modified\r\nETag: \"b\"\r\nCache-Control: max-age=0\r\nConnection: close\r\n\r\n".utf8)), .closeWithFIN]
            }
            return [.send(Array("HTTP/1.1 200 OK\r\nETag: \"a\"\r\nCache-Control: max-age=0\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)), .closeWithFIN]
        }
        let manager = Self.manager(try HTTPCache())
        let url = server.baseURL.appendingPathComponent("resource")
        try await Self.get(url, on: manager)
        let second = try await Self.get(url, on: manager)
        #expect((second.error as? URLError)?.code == .badServerResponse, "\(String(describing: second.error))")
        let third = try await Self.get(url, on: manager)
        #expect(third.error == nil && Self.body(third) == "version a")
        #expect(third.cacheResult == .miss)
    }
}
