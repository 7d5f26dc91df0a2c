import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import Synchronization

/// AsyncHTTPClient 1.37 with `inFlight` requests at a time in a task group, in its default
/// configuration but for the connection limit and the authorities trusted (its HTTP version is
/// `.automatic`: HTTP/2 where the server's ALPN offers it, streams on one connection).
enum AsyncHTTPClientBench {
    /// A client with `inFlight` connections per host and the workload's authorities, never
    /// shut down: its shutdown (closing every connection) would fall inside the measured time,
    /// as no other client's teardown does. The process ends right after the measurement.
    static func client(_ workload: Workload) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = workload.inFlight
        if let caFile = workload.caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            configuration.tlsConfiguration = tls
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        kept.withLock { $0.append(client) }
        return client
    }

    private static let kept = Mutex<[HTTPClient]>([])

    static func run(_ workload: Workload) throws -> Tally {
        let client = client(workload)
        return TaskGroupDriver.run(workload) {
            let (ok, bytes) = await fetch(client, workload)
            return ok ? bytes : nil
        }
    }

    /// One GET: whether it answered 200, and its body's length.
    static func fetch(_ client: HTTPClient, _ workload: Workload) async -> (Bool, Int64) {
        do {
            let response = try await client.execute(HTTPClientRequest(url: workload.url.absoluteString), timeout: .seconds(120))
            guard response.status == .ok else { return (false, 0) }
            var bytes: Int64 = 0
            if let path = workload.file {
                _ = FileManager.default.createFile(atPath: path, contents: nil)
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
                defer { try? handle.close() }
                for try await chunk in response.body {
                    try handle.write(contentsOf: Data(chunk.readableBytesView))
                    bytes += Int64(chunk.readableBytes)
                }
            } else {
                let body = try await response.body.collect(upTo: 1 << 30)
                bytes = Int64(body.readableBytes)
            }
            return (true, bytes)
        } catch {
            return (false, 0)
        }
    }
}
