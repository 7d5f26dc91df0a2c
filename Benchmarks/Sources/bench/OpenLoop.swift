import ArgumentParser
import AsyncHTTPClient
import CRawCurl
import Foundation
import HTTPOperations
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Latency under a fixed load: request `i` is due `i / rate` seconds after the start and is
/// issued then, however many are still in flight. Its latency runs from when it was due to
/// when its whole answer was in, so a client that falls behind cannot hide its queue: a
/// request it could not start on time counts its wait (no coordinated omission). At most
/// `inFlight` requests are out at once, for every client alike (as wrk2 keeps a fixed set of
/// connections): one that falls due beyond them waits, in order, until an answer frees a
/// place, and that wait counts. Handed every due request at once, clients that fell behind
/// collapsed in their own queues and the run did not end (Docs/Performance.md): a fact about
/// overload, not about latency at a load the client can carry. The requests due in the first
/// second are issued but left out of the percentiles (``LatencyRecorder/warmUp``).
enum OpenLoop {
    /// Runs `workload.count` requests at `rate` per second through `client`.
    static func run(_ client: Bench.Client, _ workload: Workload, rate: Double) throws -> LatencyRecorder {
        let recorder = LatencyRecorder(count: workload.count, rate: rate, inFlight: workload.inFlight)
        switch client {
        case .raw:
            var latencies = [Double](repeating: -1, count: workload.count)
            let result = raw_curl_open_loop(workload.url.absoluteString, workload.count, rate, workload.caFile,
                                            workload.inFlight, &latencies)
            recorder.takeRaw(latencies, bytes: result.body_bytes)
        case .operations:
            let manager = OperationsClient.manager(workload)
            if recorder.stamps != nil { manager.operationFactory = { StampedOperation(request: $0) } }
            recorder.drive { index in
                let operation = manager.httpRequestOperation(with: URLRequest(url: workload.url), success: { operation, object in
                    recorder.stamp(index, operation as? StampedOperation)
                    recorder.record(index, ok: true, bytes: Int64((object as? Data)?.count ?? 0))
                }, failure: { _, _ in recorder.record(index, ok: false, bytes: 0) })
                manager.enqueue(operation)
            }
        case .async:
            let manager = OperationsClient.manager(workload)
            recorder.drive { index in
                Task {
                    do {
                        let request = try manager.requestSerializer.request(method: "GET", urlString: workload.url.absoluteString,
                                                                            parameters: nil)
                        let body = try await manager.run(manager.httpRequestOperation(with: request, success: nil, failure: nil),
                                                         as: Data?.self)
                        recorder.record(index, ok: true, bytes: Int64(body?.count ?? 0))
                    } catch {
                        recorder.record(index, ok: false, bytes: 0)
                    }
                }
            }
        case .asynchttpclient:
            let client = AsyncHTTPClientBench.client(workload)
            recorder.drive { index in
                Task {
                    let (ok, bytes) = await AsyncHTTPClientBench.fetch(client, workload)
                    recorder.record(index, ok: ok, bytes: bytes)
                }
            }
            recorder.wait()
        case .urlsession:
            let session = URLSessionClient.session(workload)
            recorder.drive { index in
                session.dataTask(with: workload.url) { data, response, error in
                    recorder.record(index, ok: error == nil && (response as? HTTPURLResponse)?.statusCode == 200,
                                    bytes: Int64(data?.count ?? 0))
                }.resume()
            }
            recorder.wait()
        default:
            throw ValidationError("--rate: raw, operations, async, urlsession or asynchttpclient")
        }
        recorder.wait()
        return recorder
    }
}

/// The schedule of an open-loop run and what each request's answer took from when it was due.
///
/// Holds its mutable state in one struct behind one `Mutex`.
final class LatencyRecorder: Sendable {
    private struct State {
        /// Seconds from due to answered; -1 while unanswered, -2 for a failure.
        var latencies: [Double]
        var tally = Tally()
        /// Answers recorded for a request already answered: must stay 0.
        var duplicates = 0
        var unanswered: Int
    }

    private let state: Mutex<State>
    /// Where each request's time went, kept only for `BENCH_LATENCY_LOG` (LatencyStamps.swift).
    let stamps: LatencyStamps?
    private let done = DispatchSemaphore(value: 0)
    /// Places for requests out at once: taken when one is issued, given back by its answer.
    private let places: DispatchSemaphore
    private let rate: Double
    private let count: Int
    /// CLOCK_MONOTONIC nanoseconds at which request 0 is due.
    private let start: UInt64

    init(count: Int, rate: Double, inFlight: Int) {
        self.count = count
        self.rate = rate
        places = DispatchSemaphore(value: max(1, inFlight))
        state = Mutex(State(latencies: [Double](repeating: -1, count: count), unanswered: count))
        stamps = ProcessInfo.processInfo.environment["BENCH_LATENCY_LOG"] == nil ? nil : LatencyStamps(count: count)
        start = Self.now() + 10_000_000
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    private func due(_ index: Int) -> UInt64 {
        start + UInt64((Double(index) / rate * 1e9).rounded())
    }

    /// Calls `issue` with each request's index when it is due and a place is free, on this
    /// thread, sleeping in between.
    func drive(_ issue: (Int) -> Void) {
        for index in 0..<count {
            let due = due(index)
            var time = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
            places.wait()
            stamps?.issued(index)
            issue(index)
        }
    }

    /// Records request `index`'s answer, now.
    func record(_ index: Int, ok: Bool, bytes: Int64) {
        let latency = Double(Int64(bitPattern: Self.now() &- due(index))) / 1e9
        let (first, last) = state.withLock { state -> (Bool, Bool) in
            guard state.latencies[index] == -1 else {
                state.duplicates += 1
                return (false, false)
            }
            state.latencies[index] = ok ? latency : -2
            if ok { state.tally.completed += 1; state.tally.bytes += bytes } else { state.tally.failed += 1 }
            state.unanswered -= 1
            return (true, state.unanswered == 0)
        }
        if first { places.signal() }
        if last { done.signal() }
    }

    /// The raw client's latencies, measured in C on the same clock.
    func takeRaw(_ latencies: [Double], bytes: Int64) {
        state.withLock { state in
            for (index, latency) in latencies.enumerated() {
                state.latencies[index] = latency < 0 ? -2 : latency
                if latency < 0 { state.tally.failed += 1 } else { state.tally.completed += 1 }
            }
            state.tally.bytes = bytes
            state.unanswered = 0
        }
        done.signal()
    }

    /// Waits for every request's answer (any number of times).
    func wait() {
        guard count > 0 else { return }
        done.wait()
        done.signal()
    }

    /// Records where an answered request's time went, when stamps are kept.
    func stamp(_ index: Int, _ operation: StampedOperation?) {
        guard let stamps, let operation else { return }
        stamps.answered(index, operation: operation, due: due(index))
    }

    /// Writes one line per request, "index due-seconds latency-seconds" (latency -2: failed),
    /// then, for the operations client, the seconds from due to issued and to started, and
    /// curl's timings (LatencyStamps), for looking at when the slow ones fell due and where
    /// their time went (`BENCH_LATENCY_LOG=path`).
    func log(to path: String) throws {
        let lines = state.withLock { state in
            state.latencies.enumerated().map { index, latency in
                "\(index) \(Double(index) / rate) \(latency)" + (stamps.map { " " + $0.line(index, due: due(index)) } ?? "")
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    var tally: Tally { state.withLock { $0.tally } }
    var duplicates: Int { state.withLock { $0.duplicates } }

    /// The requests left out of the percentiles: those due in the first second (a fifth of the
    /// run at most), while each client opens its connections and shakes hands. A server's
    /// client runs warm; the handshakes have a row of their own.
    var warmUp: Int { min(count / 5, Int(rate)) }

    /// Milliseconds at each of `quantiles` (nearest rank) over the requests after the
    /// warm-up, a failed one counted as infinitely late (a client whose slowest requests fail
    /// must not show a better tail for it).
    func milliseconds(at quantiles: [Double]) -> [Double] {
        let sorted = state.withLock { $0.latencies[warmUp...].map { $0 == -2 ? Double.infinity : $0 } }.sorted()
        guard !sorted.isEmpty else { return quantiles.map { _ in .nan } }
        return quantiles.map { quantile in
            let rank = max(1, Int((quantile * Double(sorted.count)).rounded(.up)))
            return sorted[min(rank, sorted.count) - 1] * 1e3
        }
    }
}
