import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

/// AsyncHTTPClient 1.37 with `inFlight` requests at a time in a task group, in its default
/// configuration but for the connection limit and the authorities trusted (its HTTP version is
/// `.automatic`: HTTP/2 where the server's ALPN offers it, streams on one connection).
enum AsyncHTTPClientBench {
    /// A client with `inFlight` connections per host and the workload's authorities.
    static func client(_ workload: Workload) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = workload.inFlight
        if let caFile = workload.caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            configuration.tlsConfiguration = tls
        }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    static func run(_ workload: Workload) throws -> Tally {
        let client = client(workload)
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        Task {
            let tally = await withTaskGroup(of: (Bool, Int64).self) { group -> Tally in
                var tally = Tally()
                var started = 0
                func add() {
                    started += 1
                    group.addTask { await fetch(client, workload) }
                }
                while started < min(workload.inFlight, workload.count) { add() }
                for await (ok, bytes) in group {
                    if ok { tally.completed += 1; tally.bytes += bytes } else { tally.failed += 1 }
                    if started < workload.count { add() }
                }
                return tally
            }
            result.set(tally)
            done.signal()
        }
        done.wait()
        try client.syncShutdown()
        return result.get()
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

    /// Hands the tally from the task to the waiting thread.
    private final class ResultBox: @unchecked Sendable {
        // @unchecked: written once before `done.signal()`, read after `done.wait()`.
        private var tally = Tally()
        func set(_ value: Tally) { tally = value }
        func get() -> Tally { tally }
    }
}
