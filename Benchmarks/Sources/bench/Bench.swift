import ArgumentParser
import Foundation
import HTTPOperations
import HTTPTypes

#if canImport(Glibc)
import Glibc
#endif

/// One measurement in this process: `count` GETs of `url` with `inFlight` at once, through
/// one client, to memory or to a file. Prints one JSON line; `Benchmarks/run` starts nginx,
/// interleaves clients and repetitions, and reports medians and ratios.
@main
struct Bench: ParsableCommand {
    enum Client: String, ExpressibleByArgument, CaseIterable {
        /// A plain libcurl multi loop in C: the physical limit of the transport.
        case raw
        /// The same, each slot keeping its body buffer for the next body: the limit for bodies
        /// in memory.
        case rawReuse
        /// HTTPRequestOperations through an HTTPRequestOperationManager, as a user writes it.
        case operations
        /// The same with logging at debug, metrics and tracing switched on (see ObservedClient).
        case observed
        /// Only one of them switched on, to tell their costs apart.
        case observedLogging, observedMetrics, observedTracing
        /// Logging at debug, metrics and tracing to backends that drop everything: the
        /// library's own cost.
        case observedLibraryOnly
        /// Only metrics, or only tracing, to the dropping backends.
        case droppingMetrics, droppingTracing
        /// HTTPOperations' operations POSTing one request built once by the JSON serializer
        /// (JSON uploads only): the bytes encoded once, as raw libcurl sends them.
        case operationsEncodedOnce
        /// The manager's JSON request serializer alone, building the upload POST `count`
        /// times with no I/O.
        case serializeOnly
        /// HTTPOperations' callback verb (`manager.get(urlString, success:failure:)`), all
        /// enqueued at once: the async verb's request building, with blocks.
        case verbs
        /// HTTPOperations' typed async door (a serializer-built request, `try await
        /// manager.run(_:as:)`), in a task group of N.
        case async
        /// HTTPOperations' HTTPTypes door (`try await manager.perform(HTTPRequest)`), in a task
        /// group of N.
        case httptypes
        /// The HTTPTypes door's operations (`httpRequestOperation(for: HTTPRequest)`) with
        /// success and failure blocks, all enqueued at once as `operations` does: the door
        /// without the task group, to tell the door's cost from the async harness's.
        case httptypesOperations
        /// URLSession from FoundationNetworking.
        case urlsession
        /// AsyncHTTPClient on SwiftNIO.
        case asynchttpclient
        /// `count` operations chained by addDependency, each one GET, through the manager.
        case chainThroughManager
        /// The same chain handed straight to OperationQueue.
        case chainOnQueue
        /// `count` HTTPRequestOperations with no I/O (cancelled before they start) through the
        /// manager's queue: the cost of the Operation machinery.
        case noio
        /// `count` empty BlockOperations through an OperationQueue: Foundation's own cost.
        case noioBlock
    }

    @Option(help: "The client: \(Client.allCases.map(\.rawValue).joined(separator: ", ")).")
    var client: Client

    @Option(help: "The URL to GET.")
    var url = "http://127.0.0.1/"

    @Option(help: "How many requests (or operations).")
    var count = 20_000

    @Option(help: "How many at once.")
    var inFlight = 16

    @Option(help: "Write each body to this file instead of memory.")
    var toFile: String?

    @Option(help: """
        Trust this PEM file's authorities instead of the system's (https; every client but \
        URLSession, which reads only the system's: Benchmarks/run adds the CA to it in a mount \
        namespace of its own).
        """)
    var cacert: String?

    @Option(name: .customLong("pinned-key"), help: "Pin this public key, as sha256//BASE64 (https; HTTPOperations' clients).")
    var pinnedKey: String?

    @Flag(help: "Wait for a connection that may multiplex (raw: CURLOPT_PIPEWAIT; HTTPOperations does it by itself).")
    var multiplex = false

    @Flag(help: "POST a small JSON object instead of GETs (raw, operations, verbs, async, urlsession, asynchttpclient).")
    var postJSON = false

    @Option(help: "POST this file instead of GETs (raw, operations, async, urlsession, asynchttpclient).")
    var postFile: String?

    @Option(help: """
        Open loop: issue the requests at this many per second, whatever is in flight, and report \
        latency percentiles from each request's due time (--in-flight then caps connections).
        """)
    var rate: Double?

    func run() throws {
        // Certificates are read and the policy built before the clock starts.
        let workload = try makeWorkload()
        let cpuBefore = cpuSeconds()
        let started = DispatchTime.now()
        var openLoop: LatencyRecorder?
        var result: Tally
        if let rate {
            guard rate > 0 else { throw ValidationError("--rate must be positive") }
            openLoop = try OpenLoop.run(client, workload, rate: rate)
            result = openLoop!.tally
        } else {
            result = try measure(workload)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        // A file upload's figure is the bytes sent (the answers are a few bytes each).
        if case .file(let path) = workload.upload { result.bytes = Int64(result.completed) * UploadBody.size(of: path) }
        let cpu = cpuSeconds() - cpuBefore
        var line: [String: Any] = [
            "client": client.rawValue, "count": count, "inFlight": inFlight,
            "completed": result.completed, "failed": result.failed, "bytes": result.bytes,
            "seconds": elapsed, "cpuSeconds": cpu,
            "requestsPerSecond": Double(result.completed) / elapsed,
            "megabytesPerSecond": Double(result.bytes) / elapsed / 1e6,
            "cpuMicrosecondsPerRequest": cpu / Double(max(result.completed, 1)) * 1e6,
            "microsecondsPerOperation": elapsed / Double(max(result.completed, 1)) * 1e6,
            "peakRSSBytes": peakRSS(),
        ]
        if let openLoop, let path = ProcessInfo.processInfo.environment["BENCH_LATENCY_LOG"] {
            try openLoop.log(to: path)
        }
        if let openLoop, let rate {
            let percentiles = openLoop.milliseconds(at: [0.5, 0.99, 0.999, 1])
            line["rate"] = rate
            line["duplicates"] = openLoop.duplicates
            line["warmUpRequests"] = openLoop.warmUp
            for (key, value) in zip(["p50Milliseconds", "p99Milliseconds", "p999Milliseconds", "maxMilliseconds"], percentiles) {
                line[key] = value.isFinite ? value : NSNull()
            }
        }
        let json = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
        if result.failed > 0 { throw ExitCode(2) }
        // An answer recorded twice for one request is the harness's or the client's bug.
        if let openLoop, openLoop.duplicates > 0 { throw ExitCode(3) }
    }

    private func makeWorkload() throws -> Workload {
        guard let target = URL(string: url) else { throw ValidationError("bad URL") }
        let upload: UploadBody? = postFile.map { .file($0) } ?? (postJSON ? .json : nil)
        return Workload(url: target, count: count, inFlight: inFlight, file: toFile, caFile: cacert,
                        securityPolicy: try securityPolicy(), multiplex: multiplex, upload: upload)
    }

    private func measure(_ workload: Workload) throws -> Tally {
        if let upload = workload.upload {
            switch (client, upload) {
            case (.raw, _): return RawClient.upload(workload, upload)
            case (.operations, _): return try UploadClients.operations(workload, upload)
            case (.operationsEncodedOnce, .json): return try UploadClients.operations(workload, upload, encodedOnce: true)
            case (.verbs, .json): return UploadClients.verbs(workload)
            case (.async, _): return UploadClients.async(workload, upload)
            case (.urlsession, _): return try UploadClients.urlSession(workload, upload)
            case (.asynchttpclient, _): return try UploadClients.asyncHTTPClient(workload, upload)
            default: throw ValidationError("no upload for the \(client.rawValue) client")
            }
        }
        switch client {
        case .raw: return RawClient.run(workload)
        case .rawReuse: return RawClient.run(workload, reusingBuffers: true)
        case .operations: return try OperationsClient.run(workload)
        case .observed: return try OperationsClient.run(workload) { ObservedClient.switchOn($0, [.logging, .metrics, .tracing]) }
        case .observedLogging: return try OperationsClient.run(workload) { ObservedClient.switchOn($0, [.logging]) }
        case .observedMetrics: return try OperationsClient.run(workload) { ObservedClient.switchOn($0, [.metrics]) }
        case .observedTracing: return try OperationsClient.run(workload) { ObservedClient.switchOn($0, [.tracing]) }
        case .observedLibraryOnly: return try OperationsClient.run(workload) { ObservedClient.switchOn($0, [.logging, .droppingBackends]) }
        case .droppingMetrics: return try OperationsClient.run(workload) { $0.defaultConfiguration.metricsFactory = DroppingBackends.Metrics() }
        case .droppingTracing: return try OperationsClient.run(workload) { $0.tracer = DroppingBackends.Tracer() }
        case .urlsession: return URLSessionClient.run(workload)
        case .asynchttpclient: return try AsyncHTTPClientBench.run(workload)
        case .verbs: return OperationsClient.verbs(workload)
        case .async: return AsyncDoorsClient.run(workload, door: .asyncVerb)
        case .httptypes: return AsyncDoorsClient.run(workload, door: .httpTypes)
        case .httptypesOperations: return try OperationsClient.run(workload, door: .httpTypes)
        case .chainThroughManager, .chainOnQueue: return OperationsClient.chain(workload, throughManager: client == .chainThroughManager)
        case .noio: return OperationsClient.withoutIO(workload)
        case .noioBlock: return OperationsClient.blockOperations(workload)
        case .serializeOnly: return try UploadClients.serializeOnly(workload)
        case .operationsEncodedOnce: throw ValidationError("operationsEncodedOnce sends JSON uploads only (--post-json)")
        }
    }

    /// The security policy `--cacert` and `--pinned-key` ask for; nil for the default one.
    private func securityPolicy() throws -> SecurityPolicy? {
        guard cacert != nil || pinnedKey != nil else { return nil }
        let authorities = try cacert.map { try TLSCertificate.certificates(contentsOf: URL(fileURLWithPath: $0)) }
        return try SecurityPolicy(pinningMode: pinnedKey == nil ? .none : .publicKey,
                                  pinnedPublicKeys: try pinnedKey.map { [try PublicKeyPin($0)] } ?? [],
                                  trustedCertificateAuthorities: authorities)
    }

    private func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    private func peakRSS() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss * 1024
    }
}

/// What one measurement asks for.
struct Workload: Sendable {
    let url: URL
    let count: Int
    let inFlight: Int
    /// Bodies go to this file (rewritten per request) instead of memory.
    let file: String?
    /// The PEM file of the authorities a TLS server is verified against; nil for the system's.
    let caFile: String?
    /// What HTTPOperations' clients set as their manager's policy (trusting `caFile`); nil to
    /// leave the default.
    let securityPolicy: SecurityPolicy?
    /// Raw libcurl waits for a connection that may multiplex (`--multiplex`).
    let multiplex: Bool
    /// POSTs this instead of GETs; nil for GETs.
    let upload: UploadBody?

    /// The URL's parts as the HTTPTypes door's caller writes them (Docs/HTTPTypesDoor.md),
    /// taken apart once, as the other clients parse the URL once: an `HTTPRequest` made from
    /// a `URL` costs about 9,500 instructions more per small GET than one made from its parts
    /// (swift-http-types parses the URL again), the caller's and not the door's
    /// (Docs/Performance.md).
    let target: (scheme: String, authority: String, path: String)

    init(url: URL, count: Int, inFlight: Int, file: String?, caFile: String? = nil,
         securityPolicy: SecurityPolicy? = nil, multiplex: Bool = false, upload: UploadBody? = nil) {
        self.url = url
        self.count = count
        self.inFlight = inFlight
        self.file = file
        self.caFile = caFile
        self.securityPolicy = securityPolicy
        self.multiplex = multiplex
        self.upload = upload
        let host = url.host(percentEncoded: true).map { $0.contains(":") ? "[\($0)]" : $0 } ?? ""
        let authority = url.port.map { "\(host):\($0)" } ?? host
        let path = url.path(percentEncoded: true)
        let query = url.query(percentEncoded: true).map { "?\($0)" } ?? ""
        target = (url.scheme ?? "http", authority, (path.isEmpty ? "/" : path) + query)
    }

    /// A GET of the URL as the HTTPTypes door's caller makes it.
    var httpRequest: HTTPRequest {
        HTTPRequest(method: .get, scheme: target.scheme, authority: target.authority, path: target.path)
    }
}

/// What one measurement did.
struct Tally: Sendable {
    var completed = 0
    var failed = 0
    var bytes: Int64 = 0
}
