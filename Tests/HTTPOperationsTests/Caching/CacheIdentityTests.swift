import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests.HTTPCacheOperations {
    // MARK: - Whom a stored response speaks for (issue 38)

    /// The report: a `private, max-age=3600` response to `Cookie: session=alice` was the
    /// answer to a request with `Cookie: session=bob` (responses were kept apart only by
    /// `Authorization` and `Vary`). A server's manager acts for many users.
    @Test func oneUsersAnswerIsNeverAnothersByCookie() async throws {
        let manager = Self.manager(try HTTPCache())
        let url = testServer.url(.cacheable(key: Self.key("cookie-user"), cacheControl: "private, max-age=3600"))
        let alice = try await Self.get(url, on: manager, headers: ["Cookie": "session=alice"])
        let aliceAgain = try await Self.get(url, on: manager, headers: ["Cookie": "session=alice"])
        let bob = try await Self.get(url, on: manager, headers: ["Cookie": "session=bob"])
        let nobody = try await Self.get(url, on: manager)
        #expect(alice.cacheResult == .miss)
        #expect(aliceAgain.cacheResult == .hit, "the same user's answer is kept")
        #expect(bob.cacheResult == .miss, "Alice's answer was Bob's")
        #expect(Self.body(bob) != "" && nobody.cacheResult == .miss, "a user's answer was an anonymous request's")
    }

    /// The same through two cookie stores on one manager (curl adds their cookies, unseen by
    /// the cache): a response stored for one store is never the other's. Also when both
    /// requests carry the same `Cookie` field of their own: curl adds each store's cookies
    /// beside it (the store's identity was left out of the cache's view then).
    @Test(arguments: [nil, "consent=1"])
    func oneUsersAnswerIsNeverAnothersByCookieStore(ownCookie: String?) async throws {
        let manager = Self.manager(try HTTPCache())
        let url = testServer.url(.cacheable(key: Self.key("store-user"), cacheControl: "private, max-age=3600"))
        func get(with store: CookieStore) async throws -> HTTPRequestOperation {
            var request = URLRequest(url: url)
            request.setValue(ownCookie, forHTTPHeaderField: "Cookie")
            let operation = manager.httpRequestOperation(with: request, success: nil, failure: nil)
            operation.configuration.cookieStore = store
            manager.enqueue(operation)
            try await waitUntilFinished(operation)
            return operation
        }
        let (aliceStore, bobStore) = (CookieStore(), CookieStore())
        #expect(try await get(with: aliceStore).cacheResult == .miss)
        #expect(try await get(with: aliceStore).cacheResult == .hit)
        #expect(try await get(with: bobStore).cacheResult == .miss, "one store's answer was another's")
    }

    /// A `Set-Cookie` is what the server gave the one client it answered (whose cookie store,
    /// if any, took it from the wire). A stored response answers every caller of the same
    /// identity, here every anonymous one: it never hands the cookie on. (The disk tier
    /// already dropped it; the memory tier handed `sid=alice` to the next caller.)
    @Test func aSetCookieIsNeverHandedOnFromTheCache() async throws {
        let body = "hello"
        let server = try FaultServer.start { _ in
            [.send(Array(("HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nSet-Cookie: sid=alice\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)").utf8)), .closeWithFIN]
        }
        let manager = Self.manager(try HTTPCache())
        let url = URL(string: "http://127.0.0.1:\(server.port)/session")!
        let first = try await Self.get(url, on: manager)
        let second = try await Self.get(url, on: manager)
        #expect(first.response?.value(forHTTPHeaderField: "Set-Cookie") == "sid=alice", "the network's answer keeps it")
        #expect(second.cacheResult == .hit && Self.body(second) == body)
        #expect(second.response?.value(forHTTPHeaderField: "Set-Cookie") == nil, "another caller was handed sid=alice")
    }

    /// An identity the cache cannot see (an API key in a field of the caller's, a tenant):
    /// the caller names it as the operation's `cachePartition`.
    @Test func aPartitionKeepsAnswersApart() async throws {
        let manager = Self.manager(try HTTPCache())
        let url = testServer.url(.cacheable(key: Self.key("partition"), cacheControl: "private, max-age=3600"))
        func get(partition: String?) async throws -> HTTPRequestOperation {
            var request = URLRequest(url: url)
            request.setValue(partition.map { "key-\($0)" }, forHTTPHeaderField: "X-Api-Key")
            let operation = manager.httpRequestOperation(with: request, success: nil, failure: nil)
            operation.cachePartition = partition
            manager.enqueue(operation)
            try await waitUntilFinished(operation)
            return operation
        }
        #expect(try await get(partition: "tenant-a").cacheResult == .miss)
        #expect(try await get(partition: "tenant-a").cacheResult == .hit)
        #expect(try await get(partition: "tenant-b").cacheResult == .miss, "tenant A's answer was tenant B's")
        #expect(try await get(partition: nil).cacheResult == .miss)
    }
}

extension AllTests {
    /// What a stored response keeps (RFC 9111 §3.1) and what reaches the cache's files.
    @Suite struct CacheStoredFields {
        /// The report: `Proxy-Authenticate` came back on a hit, and so did the fields named in
        /// `Connection` (only the 304 merge filtered them).
        @Test func hopByHopAndProxyFieldsAreNotStored() throws {
            let cache = try HTTPCache()
            let request = URLRequest(url: URL(string: "https://example.com/f")!)
            let now = Date()
            let plan = cache.plan(for: request, now: now)
            let fields: [(name: String, value: String)] = [
                ("Date", HTTPDate.format(now)), ("Cache-Control", "max-age=600"),
                ("Proxy-Authenticate", "Basic realm=\"proxy\""), ("Proxy-Authentication-Info", "x"),
                ("Connection", "X-Hop, close"), ("X-Hop", "secret"), ("Keep-Alive", "timeout=5"),
                ("Upgrade", "h2c"), ("X-Kept", "yes"),
            ]
            _ = cache.responseArrived(for: request, plan: plan, status: 200, fields: fields, body: Data("b".utf8),
                                      requestTime: now, responseTime: now)
            guard case .answer(let stored, _) = cache.plan(for: request, now: now) else {
                Issue.record("not stored")
                return
            }
            #expect(stored.fieldList.map(\.name) == ["Date", "Cache-Control", "X-Kept"])
        }

        /// From reading (issue 38), confirmed: a GET sent before a POST to the same URL, answered
        /// after the POST invalidated the URL, stored the old version again.
        @Test func anAnswerOvertakenByAnInvalidationIsNotStored() throws {
            let cache = try HTTPCache()
            let url = URL(string: "https://example.com/doc")!
            let now = Date()
            let fields: [(name: String, value: String)] = [("Date", HTTPDate.format(now)), ("Cache-Control", "max-age=600")]
            let get = URLRequest(url: url)
            let ticket = cache.invalidationTicket()
            let plan = cache.plan(for: get, now: now)
            var post = URLRequest(url: url)
            post.httpMethod = "POST"
            _ = cache.responseArrived(for: post, plan: cache.plan(for: post, now: now), status: 200, fields: [], body: Data(),
                                      requestTime: now, responseTime: now, plannedAt: cache.invalidationTicket())
            _ = cache.responseArrived(for: get, plan: plan, status: 200, fields: fields, body: Data("old".utf8),
                                      requestTime: now, responseTime: now, plannedAt: ticket)
            guard case .network = cache.plan(for: get, now: now) else {
                Issue.record("the version the POST replaced was stored again")
                return
            }
            // A GET planned after the POST is stored as usual.
            let later = cache.invalidationTicket()
            _ = cache.responseArrived(for: get, plan: cache.plan(for: get, now: now), status: 200, fields: fields,
                                      body: Data("new".utf8), requestTime: now, responseTime: now, plannedAt: later)
            guard case .answer(let stored, _) = cache.plan(for: get, now: now) else {
                Issue.record("not stored")
                return
            }
            #expect(stored.body == Data("new".utf8))
        }

        /// From reading, confirmed: the wall clock stepping back after a response was stored
        /// gave its hits a negative `Age`.
        @Test func aClockSteppedBackNeverGivesANegativeAge() throws {
            let stored = CachedResponse(key: "GET https://example.com/", url: "https://example.com/", status: 200,
                                        responseFields: [("Cache-Control", "max-age=60")], body: Data(), requestFields: [],
                                        requestTime: cacheTime(100), responseTime: cacheTime(100))
            let head = URLConnectionOperation.head(answering: stored, at: cacheTime(-3_600))
            #expect(head.value(of: "Age") == "0")
            #expect(stored.currentAge(now: cacheTime(-3_600)) == 0)
        }

        /// A file of format version 1 (which kept plain digests of credentials and `Set-Cookie`
        /// values) is removed when a cache opens the folder, not when its key is next asked for.
        @Test func filesOfAnotherVersionGoWhenTheFolderIsOpened() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let response = CachedResponse(key: "GET https://example.com/", url: "https://example.com/", status: 200,
                                          responseFields: [], body: Data("b".utf8), requestFields: [],
                                          requestTime: Date(), responseTime: Date())
            var old = try CacheFileFormat.encode(response)
            old[5] = 1  // version 1
            let name = CacheFileFormat.fileName(for: response.key)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try old.write(to: directory.appendingPathComponent(name))
            let cache = try HTTPCache(diskCapacity: 1 << 20, directory: directory)
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path))
            #expect(cache.storage.diskUsage == 0)
        }

        /// `Set-Cookie` is never written to the files; the memory tier keeps it.
        @Test func setCookieNeverReachesTheFiles() throws {
            let response = CachedResponse(key: "GET https://example.com/", url: "https://example.com/", status: 200,
                                          responseFields: [("Set-Cookie", "session=s3cret"), ("X-Kept", "yes")],
                                          body: Data("b".utf8), requestFields: [], requestTime: Date(), responseTime: Date())
            let file = try CacheFileFormat.encode(response)
            #expect(!String(decoding: file, as: UTF8.self).contains("s3cret"))
            #expect(CacheFileFormat.decode(file)?.fieldList.map(\.name) == ["X-Kept"])
        }

        /// The identity digest is keyed: no plain SHA-256 of a credential, and two values that
        /// differ never meet.
        @Test func theIdentityDigestIsKeyedAndTellsValuesApart() {
            let alice = CachedResponse.identityDigest(of: [("Authorization", "Basic YWxpY2U6aHVudGVyMg==")])
            let plain = CachedResponse.digest("Basic YWxpY2U6aHVudGVyMg==")
            #expect(alice != nil && alice != plain)
            #expect(CachedResponse.identityDigest(of: []) == nil)
            #expect(CachedResponse.identityDigest(of: [("Cookie", "a")]) != CachedResponse.identityDigest(of: [("Authorization", "a")]))
            #expect(CachedResponse.identityDigest(of: [("Cookie", "a"), ("Authorization", "b")])
                    != CachedResponse.identityDigest(of: [("Cookie", "a,1:b")]))
        }
    }
}
