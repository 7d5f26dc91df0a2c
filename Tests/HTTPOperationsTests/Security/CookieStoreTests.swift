import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    /// Cookie stores against nginx: `/cookies/set` answers `Set-Cookie: session=s3cret`, and
    /// `/cookies/show` answers the `Cookie` header it received.
    @Suite(.enabled(if: ExternalServers.nginxPath != nil || ExternalServers.required, "nginx is not installed"))
    struct CookieStores {
        static func get(_ path: String, host: String = "127.0.0.1", store: CookieStore?,
                        handlesCookies: Bool = true) async throws -> HTTPRequestOperation {
            var request = URLRequest(url: URL(string: "http://\(host):\(ExternalServers.nginx.process.port)\(path)")!)
            request.httpShouldHandleCookies = handlesCookies
            let op = HTTPRequestOperation(request: request)
            op.configuration.cookieStore = store
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(path): \(String(describing: outcome.error))")
            return op
        }

        @Test func whatTheServerSetIsSentBack() async throws {
            let store = CookieStore()
            _ = try await Self.get("/cookies/set", store: store)
            #expect(try await Self.get("/cookies/show", store: store).responseString == "session=s3cret")
            // Another store, or none, has nothing to send.
            #expect(try await Self.get("/cookies/show", store: CookieStore()).responseString == "")
            #expect(try await Self.get("/cookies/show", store: nil).responseString == "")
        }

        @Test func aCookieNeverGoesToAnotherDomain() async throws {
            let store = CookieStore()
            _ = try await Self.get("/cookies/set", store: store)
            // Same server, another host name: the cookie was set for 127.0.0.1 only.
            #expect(try await Self.get("/cookies/show", host: "localhost", store: store).responseString == "")
            #expect(try await Self.get("/cookies/show", store: store).responseString == "session=s3cret")
        }

        @Test func aRequestThatDoesNotHandleCookiesNeitherSendsNorKeepsThem() async throws {
            let store = CookieStore()
            _ = try await Self.get("/cookies/set", store: store, handlesCookies: false)
            #expect(await store.cookies().isEmpty)
            _ = try await Self.get("/cookies/set", store: store)
            #expect(try await Self.get("/cookies/show", store: store, handlesCookies: false).responseString == "")
        }

        @Test func theStoreListsItsCookies() async throws {
            let store = CookieStore()
            _ = try await Self.get("/cookies/set", store: store)
            let cookies = await store.cookies()
            #expect(cookies.count == 1)
            let cookie = try #require(cookies.first)
            #expect(cookie.name == "session" && cookie.value == "s3cret" && cookie.domain == "127.0.0.1" && cookie.path == "/")
            #expect(cookie.isHTTPOnly && cookie.isSessionOnly)
            await store.removeAll()
            #expect(await store.cookies().isEmpty)
            #expect(try await Self.get("/cookies/show", store: store).responseString == "")
        }

        @Test func aManagersOperationsShareItsStore() async throws {
            let manager = HTTPRequestOperationManager(baseURL: URL(string: ExternalServers.nginx.baseURL))
            manager.responseSerializer = HTTPResponseSerializer()
            manager.defaultConfiguration.cookieStore = CookieStore()
            // Requests made by the manager's serializer, as its verbs make them.
            let set = try manager.makeRequest("GET", "cookies/set", parameters: nil)
            _ = try await manager.run(manager.httpRequestOperation(with: set, success: nil, failure: nil), as: Data.self)
            let show = try manager.makeRequest("GET", "cookies/show", parameters: nil)
            let shown = try await manager.run(manager.httpRequestOperation(with: show, success: nil, failure: nil), as: Data.self)
            #expect(String(decoding: shown, as: UTF8.self) == "session=s3cret")
        }

        @Test func aFileIsWrittenOnlyWhenAskedAndReadBack() async throws {
            let file = temporaryFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let store = CookieStore(persistingTo: file)
            _ = try await Self.get("/cookies/set", store: store)
            #expect(!FileManager.default.fileExists(atPath: file.path), "written before save()")
            try await store.save()
            let saved = try String(contentsOf: file, encoding: .utf8)
            #expect(saved.contains("session\ts3cret"), "\(saved)")
            let reopened = CookieStore(persistingTo: file)
            #expect(try await Self.get("/cookies/show", store: reopened).responseString == "session=s3cret")
            await #expect(throws: CocoaError.self) { try await CookieStore().save() }
        }

        /// The jar holds session cookies, credentials: a new one is readable by its owner only,
        /// as the resume data and the cache's files are (curl made it 0644 under the usual
        /// umask: readable by every user of the machine). A jar that exists keeps its mode.
        @Test func aNewJarIsReadableByItsOwnerOnly() async throws {
            let file = temporaryFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let store = CookieStore(persistingTo: file)
            _ = try await Self.get("/cookies/set", store: store)
            try await store.save()
            let mode = try permissions(of: file)
            #expect(mode & 0o077 == 0, "mode \(String(mode, radix: 8))")
            #expect(try String(contentsOf: file, encoding: .utf8).contains("session\ts3cret"))
            // Saved again: still the owner's only.
            try await store.save()
            #expect(try permissions(of: file) & 0o077 == 0)
        }

        /// A server saves its cookies at exit, after a shutdown that stopped the network thread:
        /// the jar gets the cookies, not an empty file (what it got before the fix).
        @Test func aStoreSavesItsCookiesAfterItsNetworkThreadStopped() async throws {
            let file = temporaryFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let thread = NetworkThread()
            let store = CookieStore(persistingTo: file, thread: thread)
            _ = try await Self.get("/cookies/set", store: store)
            #expect(await thread.stop())
            #expect(await store.cookies().map(\.name) == ["session"])
            try await store.save()
            let saved = try String(contentsOf: file, encoding: .utf8)
            #expect(saved.contains("session\ts3cret"), "\(saved)")
        }

        @Test func netscapeLinesBecomeCookies() throws {
            let line = "#HttpOnly_.example.com\tTRUE\t/api\tTRUE\t2000000000\ttoken\ta\tb"
            let cookie = try #require(CookieStore.cookie(fromNetscapeLine: line))
            #expect(cookie.domain == ".example.com" && cookie.path == "/api" && cookie.isSecure && cookie.isHTTPOnly)
            #expect(cookie.name == "token" && cookie.value == "a\tb")
            #expect(cookie.expiresDate == Date(timeIntervalSince1970: 2_000_000_000))
            #expect(CookieStore.cookie(fromNetscapeLine: "not\ta cookie") == nil)
        }
    }
}
