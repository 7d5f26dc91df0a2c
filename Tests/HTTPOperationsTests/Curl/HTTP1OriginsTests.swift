import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// What ``HTTP1Origins`` learns and forgets (the wire behaviour is
    /// `ConnectionSharing.http1OverTLSGetsAConnectionPerRequest`).
    @Suite struct HTTP1OriginsRules {
        let origin = URL(string: "https://Example.com/a")!

        @Test func anHTTP1AnswerStopsTheWaitAndAnHTTP2AnswerBringsItBack() {
            var origins = HTTP1Origins()
            #expect(origins.shouldWaitForMultiplexing(.init(origin, route: .default)))
            origins.learn(.init(origin, route: .default), httpVersion: "1.1")
            // Same origin: host case and the default port do not matter; the path does not.
            #expect(!origins.shouldWaitForMultiplexing(.init(URL(string: "https://example.com:443/b?q")!, route: .default)))
            #expect(origins.shouldWaitForMultiplexing(.init(URL(string: "https://example.com:8443/")!, route: .default)))
            origins.learn(.init(origin, route: .default), httpVersion: "2")
            #expect(origins.shouldWaitForMultiplexing(.init(origin, route: .default)))
            origins.learn(.init(origin, route: .default), httpVersion: "1.0")
            #expect(!origins.shouldWaitForMultiplexing(.init(origin, route: .default)))
        }

        @Test func noAnswerAndPlainHTTPTeachNothing() {
            var origins = HTTP1Origins()
            origins.learn(.init(origin, route: .default), httpVersion: nil)
            #expect(origins.shouldWaitForMultiplexing(.init(origin, route: .default)))
            let plain = URL(string: "http://example.com/")!
            origins.learn(.init(plain, route: .default), httpVersion: "1.1")
            #expect(!origins.shouldWaitForMultiplexing(.init(plain, route: .default)))
            #expect(origins.shouldWaitForMultiplexing(.init(origin, route: .default)))
        }

        /// Through a Unix socket (or a proxy, or a host override) the origin may be another
        /// server: each route is remembered apart.
        @Test func eachRouteIsRememberedApart() {
            var origins = HTTP1Origins()
            let socket = NetworkRoute(unixSocketPath: "/tmp/some.sock")
            let otherSocket = NetworkRoute(unixSocketPath: "/tmp/other.sock")
            origins.learn(.init(origin, route: socket), httpVersion: "1.1")
            #expect(!origins.shouldWaitForMultiplexing(.init(origin, route: socket)))
            #expect(origins.shouldWaitForMultiplexing(.init(origin, route: .default)))
            #expect(origins.shouldWaitForMultiplexing(.init(origin, route: otherSocket)))
            origins.learn(.init(origin, route: .default), httpVersion: "1.1")
            #expect(!origins.shouldWaitForMultiplexing(.init(origin, route: .default)))
            #expect(origins.shouldWaitForMultiplexing(.init(origin, route: otherSocket)))
        }

        /// Past its capacity the memory starts again rather than grow.
        @Test func itIsBounded() {
            var origins = HTTP1Origins()
            let urls = (0...HTTP1Origins.capacity).map { URL(string: "https://host\($0).test/")! }
            for url in urls.dropLast() { origins.learn(.init(url, route: .default), httpVersion: "1.1") }
            #expect(urls.dropLast().allSatisfy { !origins.shouldWaitForMultiplexing(.init($0, route: .default)) })
            origins.learn(.init(urls.last!, route: .default), httpVersion: "1.1")
            #expect(!origins.shouldWaitForMultiplexing(.init(urls.last!, route: .default)))
            #expect(origins.shouldWaitForMultiplexing(.init(urls[0], route: .default)))
        }
    }
}
