import Foundation
import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Testing

/// The conformance scenarios whose request body is written while the response streams back.
extension AllTests.ConformanceScenarios {
    /// 1,000 round trips on one request, as the suite makes them: the writer writes one
    /// byte, `A`, then waits until the handler has read the echo of it before it writes
    /// the next; each echo arrives as a chunk of its own.
    @Test func echoInterleave() async throws {
        let (echoes, echoed) = AsyncStream.makeStream(of: Void.self)
        let body = HTTPRequestBody.restartable { writer in
            var heard = echoes.makeAsyncIterator()
            for _ in 0..<1000 {
                try await writer.write(Data("A".utf8))
                // Only once the handler has read the echo of this write.
                guard await heard.next() != nil else { break }
            }
            return nil
        }
        let chunks = try await manager.perform(HTTPRequest(method: .post, url: testServer.baseURL.appendingPathComponent("duplex/echo")),
                                               body: body) { response, responseBody in
            #expect(response.status == .ok)
            var chunks = 0
            for try await chunk in responseBody {
                chunks += 1
                #expect(chunk == Data("A".utf8), "chunk \(chunks): \(Array(chunk))")
                echoed.yield()
            }
            return chunks
        }
        #expect(chunks == 1000)
    }

    /// The other way round, as the suite words it: the server says `A`, the client writes
    /// back each chunk it reads, 1,000 times, then the server ends its chunked response;
    /// the client ends its request body only once the response body has ended. Every chunk
    /// is one `A`, and the outcome arrives (the response's end reaches the caller while the
    /// request body is still open: `ResponseEndsFirst`).
    @Test func speakInterleave() async throws {
        let outcome = try #require(try await AllTests.ResponseEndsFirst.speakBack("/duplex/letters/1000", on: .direct),
                                   "no end of the response and no outcome: the exchange stood still")
        let heard = try outcome.get()
        #expect(heard.chunks.count == 1000)
        #expect(heard.chunks.allSatisfy { $0 == Data("A".utf8) }, "\(heard.chunks.prefix(3).map { Array($0) })")
    }

    /// The server speaks numbered lines and says its next only once the request body
    /// answered the last one, then says `done`: the order is checked too.
    @Test func speakNumberedLines() async throws {
        let (lines, answers) = AsyncStream.makeStream(of: String.self)
        let body = HTTPRequestBody.restartable { writer in
            for await answer in lines { try await writer.write(Data((answer + "\n").utf8)) }
            return nil
        }
        let said = try await manager.perform(HTTPRequest(method: .post, url: testServer.baseURL.appendingPathComponent("duplex/speak/200")),
                                             body: body) { _, responseBody in
            var said: [String] = []
            var pending = ""
            for try await chunk in responseBody {
                pending += String(decoding: chunk, as: UTF8.self)
                while let newline = pending.firstIndex(of: "\n") {
                    let line = String(pending[..<newline])
                    pending.removeSubrange(...newline)
                    said.append(line)
                    if line.hasPrefix("say ") { answers.yield(String(line.dropFirst(4))) } else { answers.finish() }
                }
            }
            return said
        }
        #expect(said.count == 201)
        #expect(said.first == "say 1")
        #expect(said.last == "done", "\(said.suffix(3))")
    }

    /// A written body that writes nothing is sent chunked, as its last chunk alone.
    @Test func emptyChunkedRequestBody() async throws {
        let (response, echo) = try await manager.perform(server(.echo, .post), body: .restartable { _ in nil }, decoding: Echo.self)
        #expect(response.status == .ok)
        #expect(echo.headers["transfer-encoding"] == "chunked")
        #expect(echo.body == "")
    }

    /// The writer's return value: trailer fields after a chunked body.
    @Test func trailersWritten() async throws {
        let body = HTTPRequestBody.restartable { writer in
            try await writer.write(Data("written".utf8))
            return [HTTPField.Name("X-Checksum")!: "sha-123", HTTPField.Name("X-Count")!: "7"]
        }
        let (_, data) = try await manager.perform(server(.echo, .post), body: body)
        let echo = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(echo["body"] as? String == "written")
        #expect(echo["trailers"] as? [String: String] == ["x-checksum": "sha-123", "x-count": "7"], "\(echo)")
    }

    // MARK: - State across requests

    @Test func cookiesSetAndUsed() async throws {
        let manager = HTTPRequestOperationManager()
        manager.defaultConfiguration.cookieStore = CookieStore()
        let nginx = ExternalServers.nginx
        _ = try await manager.perform(HTTPRequest(method: .get, url: URL(string: nginx.baseURL + "/cookies/set")!))
        let (_, body) = try await manager.perform(HTTPRequest(method: .get, url: URL(string: nginx.baseURL + "/cookies/show")!))
        #expect(String(decoding: body, as: UTF8.self) == "session=s3cret")
    }

    /// The suite's ETag scenario against a server that checks the validator (before, a
    /// fixed 304 answered whatever was sent, so the test could not fail): the first GET
    /// gets the ETag, a GET naming it gets a 304 with no body, a GET naming another
    /// version gets the resource again. The door sends `If-None-Match` as given (the
    /// manager has no cache by default).
    @Test func etagRevalidation() async throws {
        let resource = server(.cacheable(key: "conformance-etag-\(UUID().uuidString)", etag: true))
        let (first, firstBody) = try await manager.perform(resource)
        #expect(first.status == .ok)
        let etag = try #require(first.headerFields[.eTag])
        #expect(!firstBody.isEmpty)

        var revalidation = resource
        revalidation.headerFields[.ifNoneMatch] = etag
        let (notModified, emptyBody) = try await manager.perform(revalidation)
        #expect(notModified.status == .notModified)
        #expect(notModified.headerFields[.eTag] == etag)
        #expect(emptyBody.isEmpty)

        var otherVersion = resource
        otherVersion.headerFields[.ifNoneMatch] = "\"not-\(etag.dropFirst())"
        let (changed, changedBody) = try await manager.perform(otherVersion)
        #expect(changed.status == .ok)
        #expect(changedBody == firstBody)
    }
}
