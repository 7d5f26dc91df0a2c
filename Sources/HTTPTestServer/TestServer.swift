import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import Synchronization

/// An HTTP/1.1 server on a random loopback port, for tests and `httpop demo`.
///
/// It answers the ``Endpoint`` routes, including faults a real network produces (a
/// connection dropped mid-body, a slow answer), and streams large bodies with back-pressure
/// so that serving 256 MB holds no more than a few chunks in memory.
///
/// ```swift
/// let server = try TestServer.start()
/// defer { server.shutdown() }
/// let url = server.url(.bytes(1_000_000))
/// ```
public final class TestServer: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let accepted: AcceptedConnections
    private let counters: ResourceCounters

    private let log: ReceivedRequests
    /// `http`, or `https` for a TLS server.
    private let scheme: String

    /// The loopback port the server listens on.
    public let port: Int

    /// Every request head the server received, in order (the last 10,000): a test proves with
    /// it that nothing was sent, or what was.
    public var receivedRequests: [ReceivedRequest] { log.all }

    /// How many connections the server has accepted so far: a client that keeps its
    /// connections warm opens no more than it has requests in flight.
    public var acceptedConnections: Int { accepted.count.load(ordering: .relaxed) }

    /// The most ``Endpoint/delay(milliseconds:)`` requests the server held at once: requests
    /// started together that no client queued behind one another all wait together.
    public var mostDelayedRequestsAtOnce: Int { counters.mostDelayedAtOnce }

    /// Starts ``mostDelayedRequestsAtOnce`` again from the requests waiting now.
    public func resetMostDelayedRequestsAtOnce() { counters.resetMostDelayed() }

    private init(group: MultiThreadedEventLoopGroup, channel: any Channel, accepted: AcceptedConnections,
                 counters: ResourceCounters, log: ReceivedRequests, scheme: String) {
        self.log = log
        self.scheme = scheme
        self.group = group
        self.counters = counters
        self.channel = channel
        self.accepted = accepted
        self.port = channel.localAddress?.port ?? 0
    }

    /// Starts a server on 127.0.0.1 and a port the kernel picks.
    ///
    /// - Throws: Whatever binding the socket throws.
    public static func start() throws -> TestServer {
        try start(scheme: "http", securingConnections: nil)
    }

    /// Starts a server whose connections first go through `securingConnections` (a TLS
    /// handler, added before HTTP), so that its URLs use `scheme`. For `HTTPTestTLSServer`.
    package static func start(scheme: String, securingConnections: (@Sendable (any Channel) throws -> Void)?) throws -> TestServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let counters = ResourceCounters()
        let accepted = AcceptedConnections()
        let log = ReceivedRequests()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 512)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                accepted.count.add(1, ordering: .relaxed)
                return channel.eventLoop.makeCompletedFuture {
                    try securingConnections?(channel)
                    let sync = channel.pipeline.syncOperations
                    try sync.configureHTTPServerPipeline(withErrorHandling: true)
                    try sync.addHandler(InformationalResponseWriter())
                    try sync.addHandler(RequestLogger(log: log))
                    // Compress only responses the router marked, so lengths elsewhere stay exact.
                    try sync.addHandler(HTTPResponseCompressor(responseCompressionPredicate: { head, _ in
                        guard head.headers.contains(name: RequestRouter.compressMarker) else { return .doNotCompress }
                        head.headers.remove(name: RequestRouter.compressMarker)
                        return .compressIfPossible
                    }))
                    try sync.addHandler(RequestRouter(counters: counters))
                }
            }
        do {
            let channel = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
            return TestServer(group: group, channel: channel, accepted: accepted, counters: counters, log: log, scheme: scheme)
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
    }

    /// How many requests for its bytes the resumable resource `key` has answered (see
    /// ``ResumableOptions/key``); requests refused with a 401 are not counted. A test proves
    /// with it that a request was, or was not, sent again.
    public func requestCount(forResumableKey key: String) -> Int {
        counters.count(key)
    }

    /// The uploads of the resumable-upload routes (`/tus/...`, `/ietf/...`), and their planned
    /// faults.
    public var uploads: UploadStore { counters.uploads }

    /// How many requests the event feed `key` has received (see ``Endpoint/events(key:feed:)``).
    public func requestCount(forEventFeed key: String) -> Int {
        counters.count("events/" + key)
    }

    /// The `Last-Event-ID` of each request the event feed `key` received, in order (nil for a
    /// request without one).
    public func lastEventIDs(forEventFeed key: String) -> [String?] {
        receivedRequests.filter { $0.uri.hasPrefix("/events/\(key)?") }.map { $0.header("Last-Event-ID") }
    }

    /// Moves the cacheable resource `key` to its next version (a new body, `ETag` and
    /// `Last-Modified`; see ``Endpoint/cacheable(key:cacheControl:etag:lastModified:vary:)``).
    public func changeCacheable(_ key: String) {
        _ = counters.next(key + "#version")
    }

    /// The base URL, `http://127.0.0.1:<port>` (`https` for a TLS server).
    public var baseURL: URL { URL(string: "\(scheme)://127.0.0.1:\(port)")! }

    /// The URL of `endpoint` on this server.
    public func url(_ endpoint: Endpoint) -> URL {
        url(endpoint, host: "127.0.0.1")
    }

    /// The URL of `endpoint` on this server, reached through `host` (`localhost`, another
    /// loopback address, a name the client resolves here).
    public func url(_ endpoint: Endpoint, host: String) -> URL {
        URL(string: "\(scheme)://\(host):\(port)\(endpoint.path)")!
    }

    /// Stops listening and closes every connection.
    public func shutdown() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }

    /// The byte at `offset` of every body the server generates: a sequence with period 251
    /// (a prime, so it never lines up with power-of-two chunk sizes and a misplaced chunk
    /// shows).
    public static func pattern(offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: offset % 251)
    }

    /// `count` bytes of the pattern, starting at `offset`.
    public static func pattern(offset: Int = 0, count: Int) -> Data {
        // One period, then doubling: fast even in debug builds, where tests compare megabytes.
        var data = Data((0..<251).map { pattern(offset: offset + $0) })
        while data.count < count {
            data.append(data.prefix(count - data.count))
        }
        return data.prefix(count)
    }
}

/// The number of connections a ``TestServer`` accepted, shared with its channel initializer.
private final class AcceptedConnections: Sendable {
    let count = Atomic<Int>(0)
}
