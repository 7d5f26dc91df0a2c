import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

/// What a revalidation (a 304 merged into the stored response) hands the caller.
extension AllTests.HTTPCacheOperations {
    /// A server that stores nothing fresh (`max-age=0`, `ETag "v"`) and answers a conditional
    /// request with a 304 carrying `extra` fields.
    static func revalidatingServer(body: String, extra: String = "") throws -> FaultServer {
        try FaultServer.startWithHeads { request in
            if request.field("If-None-Match") == "\"v\"" {
                return [.send(Array("HTTP/1.1 304 Not Modified\r\nETag: \"v\"\r\nCache-Control: max-age=0\r\n\(extra)Connection: close\r\n\r\n".utf8)),
                        .closeWithFIN]
            }
            return [.send(Array(("HTTP/1.1 200 OK\r\nETag: \"v\"\r\nCache-Control: max-age=0\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(body)").utf8)), .closeWithFIN]
        }
    }

    /// A `Set-Cookie` on the 304 is for this client (a rotated session): never stored, but its
    /// response carries it, as a response from the network does.
    @Test func aNotModifiedsSetCookieReachesItsCaller() async throws {
        let server = try Self.revalidatingServer(body: "stored", extra: "Set-Cookie: sid=new\r\n")
        let manager = Self.manager(try HTTPCache())
        let url = URL(string: "http://127.0.0.1:\(server.port)/r")!
        try await Self.get(url, on: manager)
        let revalidated = try await Self.get(url, on: manager)
        #expect(revalidated.cacheResult == .revalidated && Self.body(revalidated) == "stored")
        #expect(revalidated.response?.value(forHTTPHeaderField: "Set-Cookie") == "sid=new")
    }

    /// `maximumBodySize` holds for a stored body a 304 made the answer, as for a hit.
    @Test func aRevalidatedBodyOverTheLimitFails() async throws {
        let server = try Self.revalidatingServer(body: String(repeating: "x", count: 1_000))
        let manager = Self.manager(try HTTPCache())
        let url = URL(string: "http://127.0.0.1:\(server.port)/r")!
        try await Self.get(url, on: manager)
        let limited = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
        limited.maximumBodySize = 10
        manager.enqueue(limited)
        try await waitUntilFinished(limited)
        #expect((limited.error as? TransferError)?.code == .bodyTooLarge, "\(String(describing: limited.error))")
    }
}
