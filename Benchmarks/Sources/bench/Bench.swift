import ArgumentParser
import CRawCurl
import Foundation
import HTTPOperations
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One measurement in this process: `count` GETs of `url` with `inFlight` at once, through
/// one client. Prints one JSON line; `Benchmarks/run` starts nginx, interleaves clients and
/// repetitions, and reports medians and ratios.
@main
struct Bench: ParsableCommand {
    enum Client: String, ExpressibleByArgument, CaseIterable {
        /// A plain libcurl multi loop in C: the physical limit of the transport.
        case raw
        /// HTTPRequestOperations on an OperationQueue, as a user would write it.
        case operations
        /// `count` operations chained by addDependency, each one GET, enqueued through the
        /// manager (which holds waiting operations off the queue).
        case chainThroughManager
        /// The same chain handed to OperationQueue at once (Foundation re-examines every
        /// waiting operation whenever one finishes).
        case chainOnQueue
    }

    @Option(help: "The client: \(Client.allCases.map(\.rawValue).joined(separator: ", ")).")
    var client: Client

    @Option(help: "The URL to GET.")
    var url: String

    @Option(help: "How many GETs.")
    var count = 20_000

    @Option(help: "How many at once.")
    var inFlight = 16

    func run() throws {
        let cpuBefore = cpuSeconds()
        let started = DispatchTime.now()
        let (completed, failed, bytes) = try measure()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        let cpu = cpuSeconds() - cpuBefore
        let line: [String: Any] = [
            "client": client.rawValue, "count": count, "inFlight": inFlight,
            "completed": completed, "failed": failed, "bytes": bytes,
            "seconds": elapsed, "cpuSeconds": cpu,
            "requestsPerSecond": Double(completed) / elapsed,
            "megabytesPerSecond": Double(bytes) / elapsed / 1e6,
            "cpuMicrosecondsPerRequest": cpu / Double(max(completed, 1)) * 1e6,
            "peakRSSBytes": peakRSS(),
        ]
        let json = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
        if failed > 0 { throw ExitCode(2) }
    }

    private func measure() throws -> (Int, Int, Int64) {
        switch client {
        case .raw:
            let result = raw_curl_run(url, count, inFlight)
            return (result.completed, result.failed, result.body_bytes)
        case .operations:
            return try measureOperations()
        case .chainThroughManager, .chainOnQueue:
            return try measureChain(throughManager: client == .chainThroughManager)
        }
    }

    private func measureOperations() throws -> (Int, Int, Int64) {
        guard let target = URL(string: url) else { throw ValidationError("bad URL") }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = inFlight
        let totals = Mutex((completed: 0, failed: 0, bytes: Int64(0)))
        // Not waitUntilAllOperationsAreFinished(): corelibs snapshots the queue's operations
        // into an array and holds it until the last finishes, keeping every body alive.
        let allDone = DispatchSemaphore(value: 0)
        let total = count
        // Not kept in an array: like user code, let each operation and its body go when done.
        for _ in 0..<count {
            let operation = HTTPRequestOperation(request: URLRequest(url: target))
            operation.setCompletionBlockWithSuccess({ operation, _ in
                let length = Int64(operation.responseData?.count ?? 0)
                let done = totals.withLock { $0.completed += 1; $0.bytes += length; return $0.completed + $0.failed == total }
                if done { allDone.signal() }
            }, failure: { _, _ in
                let done = totals.withLock { $0.failed += 1; return $0.completed + $0.failed == total }
                if done { allDone.signal() }
            })
            queue.addOperation(operation)
        }
        allDone.wait()
        return totals.withLock { ($0.completed, $0.failed, $0.bytes) }
    }

    private func measureChain(throughManager: Bool) throws -> (Int, Int, Int64) {
        guard let target = URL(string: url) else { throw ValidationError("bad URL") }
        let manager = HTTPRequestOperationManager()
        manager.operationQueue.maxConcurrentOperationCount = inFlight
        manager.responseSerializer = HTTPResponseSerializer()
        let totals = Mutex((completed: 0, failed: 0))
        let allDone = DispatchSemaphore(value: 0)
        let total = count
        var previous: Operation?
        for _ in 0..<count {
            let operation = manager.httpRequestOperation(with: URLRequest(url: target), success: { _, _ in
                if totals.withLock({ $0.completed += 1; return $0.completed + $0.failed == total }) { allDone.signal() }
            }, failure: { _, _ in
                if totals.withLock({ $0.failed += 1; return $0.completed + $0.failed == total }) { allDone.signal() }
            })
            if let previous { operation.addDependency(previous) }
            if throughManager { manager.enqueue(operation) } else { manager.operationQueue.addOperation(operation) }
            previous = operation
        }
        allDone.wait()
        return totals.withLock { ($0.completed, $0.failed, 0) }
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
