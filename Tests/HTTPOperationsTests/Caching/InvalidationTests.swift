import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

/// Invalidation after an unsafe method (RFC 9111 §4.4), where the request went somewhere else
/// than it was sent, or its answer broke off: the server acted on it either way.
extension AllTests.HTTPCacheOperations {
    /// A 308 keeps the method: the PUT changed the resource it landed on, whose stored
    /// response must go (only the URL it was sent to, and the answer's `Location`, went). A 303
    /// makes a POST a GET: nothing unsafe reached where it landed, whose stored response stays
    /// (invalidating it would let any server drop another's entries).
    @Test(arguments: [(308, "PUT", true), (303, "POST", false)])
    func anUnsafeRequestRedirectedInvalidatesWhereItLandedOnlyIfStillUnsafe(status: Int, method: String, invalidates: Bool) async throws {
        let manager = Self.manager(try HTTPCache())
        let key = Self.key("redirected-\(method)")
        let target = testServer.url(.cacheable(key: key, cacheControl: "max-age=600"))
        try await Self.get(target, on: manager)
        let sent = try await Self.get(testServer.url(.redirectTo(target.absoluteString, status: status)), on: manager, method: method)
        #expect(sent.error == nil, "\(String(describing: sent.error))")
        #expect(testServer.requestCount(forResumableKey: key) == 2, "the \(method) did not land on the stored URL")
        let after = try await Self.get(target, on: manager)
        #expect(after.cacheResult == (invalidates ? .miss : .hit), "after a \(status)")
    }

    /// A 2xx head is enough (§4.4: "a non-error status code"): a POST whose body then broke
    /// off still changed the resource, and its failure must not leave the old answer fresh.
    @Test func anUnsafeRequestWhoseAnswerBreaksOffAfterItsHeadStillInvalidates() async throws {
        let stored = "version 0"
        let server = try FaultServer.startWithHeads { request in
            if request.method == "GET" {
                return [.send(Array(("HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: \(stored.utf8.count)\r\n"
                    + "Connection: close\r\n\r\n\(stored)").utf8)), .closeWithFIN]
            }
            return [.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nabcd".utf8)), .closeWithFIN]
        }
        let cache = try HTTPCache()
        let manager = Self.manager(cache)
        let url = URL(string: "http://127.0.0.1:\(server.port)/thing")!
        let first = try await Self.get(url, on: manager)
        #expect(Self.body(first) == stored)
        #expect(try await Self.get(url, on: manager).cacheResult == .hit)
        let post = try await Self.get(url, on: manager, method: "POST")
        #expect(post.error != nil, "a body cut at 4 of 100 bytes was a success")
        let after = try await Self.get(url, on: manager)
        #expect(after.cacheResult == .miss, "the POST's 200 left the stored answer fresh")
        #expect(cache.statistics.invalidations == 1)
    }
}
