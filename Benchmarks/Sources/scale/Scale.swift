import Foundation
import HTTPOperations
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15's scale measurement, run by `Benchmarks/scale` (which starts nginx):
///
/// 1. `count` slow transfers held at once by one process and its one network thread: the
///    resident memory each adds, the CPU the process spends while they trickle, and the time
///    to cancel them all;
/// 2. `streams` HTTP/2 requests at once to one TLS origin: how many connections carry them,
///    without a connection limit and with at most 8 per host.
///
/// Usage: `scale <slow URL> <HTTP/2 URL> <CA file> [count] [streams]`. Prints one JSON line.
@main
struct Scale {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 4, let slow = URL(string: arguments[1]), let fast = URL(string: arguments[2]) else {
            FileHandle.standardError.write(Data("usage: scale <slow URL> <HTTP/2 URL> <CA file> [count] [streams]\n".utf8))
            exit(2)
        }
        let count = arguments.count > 4 ? Int(arguments[4]) ?? 10_000 : 10_000
        let streams = arguments.count > 5 ? Int(arguments[5]) ?? 1_000 : 1_000
        var report: [String: Any] = ["count": count, "streams": streams]
        report["fileDescriptorLimit"] = raiseFileDescriptorLimit()

        // 1. Slow transfers, all in flight at once.
        let manager = HTTPRequestOperationManager()
        manager.operationQueue.maxConcurrentOperationCount = count
        let started = Atomic<Int>(0), ended = Atomic<Int>(0)
        let cancelling = Atomic<Bool>(false)
        let earlyFailures = Mutex<[String]>([])
        let allStarted = DispatchSemaphore(value: 0), allEnded = DispatchSemaphore(value: 0)
        let residentBefore = residentBytes()
        var operations: [HTTPRequestOperation] = []
        for _ in 0..<count {
            // Idle timeout of 120 s: the server sends 64 bytes a second, above curl's 1 B/s floor.
            let operation = HTTPRequestOperation(request: URLRequest(url: slow, timeoutInterval: 120))
            let counted = Atomic<Bool>(false)
            operation.setDownloadProgressBlock { _, _, _ in
                if !counted.exchange(true, ordering: .relaxed), started.add(1, ordering: .relaxed).newValue == count {
                    allStarted.signal()
                }
            }
            operation.setCompletionBlockWithSuccess({ _, _ in
                if ended.add(1, ordering: .relaxed).newValue == count { allEnded.signal() }
            }, failure: { _, error in
                if !cancelling.load(ordering: .relaxed) {
                    earlyFailures.withLock { $0.append("\(error)") }
                }
                if ended.add(1, ordering: .relaxed).newValue == count { allEnded.signal() }
            })
            operations.append(operation)
        }
        let enqueuedAt = ContinuousClock.now
        operations.forEach(manager.enqueue)
        guard allStarted.wait(timeout: .now() + 300) == .success else {
            fail("only \(started.load(ordering: .relaxed)) of \(count) transfers received bytes within 300 s")
        }
        report["secondsUntilAllReceiving"] = seconds(ContinuousClock.now - enqueuedAt)
        let residentLoaded = residentBytes()
        report["residentBytesBefore"] = residentBefore
        report["residentBytesWithAllInFlight"] = residentLoaded
        report["residentBytesPerTransfer"] = (residentLoaded - residentBefore) / count

        // The process's CPU while every transfer waits for its next few bytes.
        let window = 10.0
        let cpuBefore = cpuSeconds()
        try await Task.sleep(for: .seconds(window))
        let cpu = cpuSeconds() - cpuBefore
        report["idleWindowSeconds"] = window
        report["cpuPercentWhileWaiting"] = cpu / window * 100
        report["stillInFlightAfterWindow"] = count - ended.load(ordering: .relaxed)

        let failures = earlyFailures.withLock { $0 }
        report["failedBeforeCancel"] = failures.count
        report["firstFailureBeforeCancel"] = failures.first
        cancelling.store(true, ordering: .relaxed)
        let cancelAt = ContinuousClock.now
        operations.forEach { $0.cancel() }
        guard allEnded.wait(timeout: .now() + 120) == .success else {
            fail("only \(ended.load(ordering: .relaxed)) of \(count) operations ended within 120 s of the cancel")
        }
        report["secondsToCancelAll"] = seconds(ContinuousClock.now - cancelAt)
        operations.removeAll()

        // 2. HTTP/2 streams to one origin, all at once: without a connection limit, then with
        // at most 8 connections per host, where the transfers beyond nginx's 128 streams per
        // connection wait for a stream instead of opening connections of their own.
        let authorities = try TLSCertificate.certificates(contentsOf: URL(fileURLWithPath: arguments[3]))
        // The second run names the origin by its address, so that it cannot reuse the first
        // run's connections (the certificate names both).
        var byAddress = URLComponents(url: fast, resolvingAgainstBaseURL: false)!
        byAddress.host = "127.0.0.1"
        for (key, limits, url) in [("http2", ConnectionLimits.unlimited, fast), ("http2PerHost8", ConnectionLimits(perHost: 8), byAddress.url!)] {
            ConnectionLimits.current = limits
            for (name, value) in try Self.streams(streams, to: url, trusting: authorities) {
                report[key + name] = value
            }
        }
        ConnectionLimits.current = .unlimited

        let json = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
    }

    /// Raises the soft limit on open files to the hard one; returns the new soft limit.
    static func raiseFileDescriptorLimit() -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }

    /// Resident memory from /proc/self/statm; fails the run when it cannot be read, rather
    /// than report 0.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            fail("cannot read /proc/self/statm")
        }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("scale: \(message)\n".utf8))
        exit(1)
    }

    /// `count` requests to `url` started together on one manager: how long they took, how
    /// many failed, the HTTP versions and how many connections they opened.
    static func streams(_ count: Int, to url: URL, trusting authorities: [TLSCertificate]) throws -> [String: Any] {
        let secure = HTTPRequestOperationManager()
        secure.securityPolicy = try SecurityPolicy(trustedCertificateAuthorities: authorities)
        secure.operationQueue.maxConcurrentOperationCount = count
        let done = DispatchSemaphore(value: 0)
        let finished = Atomic<Int>(0), failed = Atomic<Int>(0)
        let operations = (0..<count).map { _ in
            let operation = secure.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
            operation.responseSerializer = HTTPResponseSerializer()
            operation.setCompletionBlockWithSuccess({ _, _ in
                if finished.add(1, ordering: .relaxed).newValue == count { done.signal() }
            }, failure: { _, _ in
                failed.add(1, ordering: .relaxed)
                if finished.add(1, ordering: .relaxed).newValue == count { done.signal() }
            })
            return operation
        }
        let startedAt = ContinuousClock.now
        operations.forEach(secure.enqueue)
        guard done.wait(timeout: .now() + 120) == .success else { fail("HTTP/2 requests did not finish within 120 s") }
        var report: [String: Any] = [:]
        report["Seconds"] = seconds(ContinuousClock.now - startedAt)
        report["Failed"] = failed.load(ordering: .relaxed)
        report["FirstError"] = operations.lazy.compactMap { $0.error.map { "\($0)" } }.first
        report["Versions"] = Set(operations.compactMap { $0.timings?.lastTransfer.httpVersion }).sorted()
        // A transfer that did not reuse a connection opened one.
        report["ConnectionsOpened"] = operations.filter { $0.timings.map { !$0.lastTransfer.reusedConnection } ?? false }.count
        return report
    }
}
