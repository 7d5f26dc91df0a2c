import CMallocStats
import Foundation
import HTTPOperations
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15's soak, run by `Benchmarks/soak` (which starts nginx and draws the plot):
/// `count` mixed requests through one manager, sampling the process every 10 s.
///
/// The mix, drawn from a seed: 70% small GETs, 15% POSTs of 4 KiB, 1% 1 MiB downloads to a
/// file (a third of them paused at their first bytes and resumed), 5% cancelled as soon as
/// they are enqueued, 5% answered 404, 4% to a closed port. Every outcome is counted once;
/// the run fails if one is missing, doubled, or not what its kind should give.
///
/// At each tenth of the run it stops sending until every operation has reported and been
/// released, and measures the heap then (see ``drain(window:after:)``): with nothing in
/// flight, the bytes still in use are the ones kept for good, so their growth from drain to
/// drain is what requests leave behind, free of the noise of the 256 operations in flight.
///
/// Usage: `soak <base URL> <closed-port URL> <count> <samples CSV> [seed]`. Prints a JSON
/// summary line.
@main
struct Soak {
    /// Counts live operations: users subclass operations, and so does the soak.
    final class SoakOperation: HTTPRequestOperation, @unchecked Sendable {
        // @unchecked Sendable: no state beyond the superclass's, which keeps it behind its lock.
        static let live = LiveOperations()
        deinit { Self.live.remove() }
    }

    /// How often the soak stops sending to measure the heap with nothing in flight.
    static let drains = 10
    /// How long a drain waits for the last operation to be released before failing the run.
    static let drainTimeout: DispatchTimeInterval = .seconds(30)

    enum Kind: Int, CaseIterable {
        case get, post, download, cancelled, notFound, refused
    }

    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 5, let base = URL(string: arguments[1]), let refused = URL(string: arguments[2]),
              let count = Int(arguments[3]) else {
            FileHandle.standardError.write(Data("usage: soak <base URL> <closed-port URL> <count> <samples CSV> [seed]\n".utf8))
            exit(2)
        }
        let samplesPath = arguments[4]
        let seed = arguments.count > 5 ? UInt64(arguments[5]) ?? 1 : UInt64.random(in: 1...UInt64.max)
        FileHandle.standardError.write(Data("soak: \(count) requests, seed \(seed)\n".utf8))

        let manager = HTTPRequestOperationManager()
        manager.operationQueue.maxConcurrentOperationCount = 64
        let window = DispatchSemaphore(value: 256)
        let outcomes = Mutex(Outcomes(count: count))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-soak-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let body = Data(repeating: 0x61, count: 4096)

        let sampler = Sampler(path: samplesPath, manager: manager)
        sampler.start()
        let startedAt = ContinuousClock.now
        var generator = SplitMix64(seed: seed)
        var drained: [Drained] = []
        for index in 0..<count {
            if index > 0, index % max(count / drains, 1) == 0 {
                drained.append(drain(window: window, after: index))
            }
            let roll = Int(generator.next() % 100)
            let kind: Kind = switch roll {
            case 0..<70: .get
            case 70..<85: .post
            case 85..<86: .download
            case 86..<91: .cancelled
            case 91..<96: .notFound
            default: .refused
            }
            var request: URLRequest
            switch kind {
            case .get, .cancelled: request = URLRequest(url: base.appendingPathComponent("small.json"))
            case .post:
                request = URLRequest(url: base.appendingPathComponent("post"))
                request.httpMethod = "POST"
                request.httpBody = body
            case .download: request = URLRequest(url: base.appendingPathComponent("1m.bin"))
            case .notFound: request = URLRequest(url: base.appendingPathComponent("missing"))
            case .refused: request = URLRequest(url: refused)
            }
            request.timeoutInterval = 30
            let operation = SoakOperation(request: request)
            SoakOperation.live.add()
            let file = folder.appendingPathComponent("\(index).bin")
            if kind == .download {
                operation.destinationURL = file
                if index % 3 == 0 {
                    // Paused at its first bytes, resumed from the completion queue: a Range request.
                    let paused = Atomic<Bool>(false)
                    // Weak: a progress call can come after the last bytes, and the resume after
                    // the operation has finished and been released.
                    operation.setDownloadProgressBlock { [weak operation] _, _, _ in
                        if !paused.exchange(true, ordering: .relaxed) {
                            guard let operation else { return }
                            operation.pause()
                            DispatchQueue.global().async { [weak operation] in operation?.resume() }
                        }
                    }
                }
            }
            let record: @Sendable (Bool, (any Error)?) -> Void = { succeeded, error in
                let expected: Bool = switch kind {
                case .get, .post, .download: succeeded
                case .cancelled: !succeeded && (error as? URLError)?.code == .cancelled || succeeded
                case .notFound: (error as? ResponseValidationError)?.statusCode == 404
                case .refused: (error as? URLError)?.code == .cannotConnectToHost
                }
                if kind == .download { try? FileManager.default.removeItem(at: file) }
                outcomes.withLock { $0.record(index: index, kind: kind, asExpected: expected, error: error) }
                window.signal()
            }
            operation.setCompletionBlockWithSuccess({ _, _ in record(true, nil) }, failure: { _, error in record(false, error) })
            window.wait()
            manager.enqueue(operation)
            if kind == .cancelled { operation.cancel() }
        }
        // Every slot back: every operation reported. Then returned, since libdispatch traps
        // when a semaphore is released with a lower value than it was made with.
        drained.append(drain(window: window, after: count))
        let elapsed = ContinuousClock.now - startedAt
        sampler.stop()
        try? FileManager.default.removeItem(at: folder)

        let result = outcomes.withLock { $0 }
        var summary: [String: Any] = [
            "count": count, "seed": seed,
            "seconds": Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            "reported": result.reported, "duplicates": result.duplicates, "unexpected": result.unexpected,
            "byKind": Dictionary(uniqueKeysWithValues: result.byKind.map { ("\(Kind(rawValue: $0.key)!)", $0.value) }),
            "liveOperationsAtEnd": SoakOperation.live.count,
            "drains": drained.map { [$0.requests, $0.heapInUse, $0.rssAnonymous] },
        ]
        summary["firstUnexpected"] = result.firstUnexpected
        let json = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
        if result.reported != count || result.duplicates > 0 || result.unexpected > 0 { exit(1) }
    }

    /// The process with nothing in flight, after `requests` requests.
    struct Drained {
        var requests: Int
        var heapInUse: Int
        var rssAnonymous: Int
    }

    /// Waits until every request sent so far has reported and every operation is released,
    /// then measures the heap: what is still held then is held for good (pools, caches,
    /// kept connections), so its growth from one drain to the next is what requests leave
    /// behind. Exits when an operation outlives ``drainTimeout``.
    static func drain(window: DispatchSemaphore, after requests: Int) -> Drained {
        // Every slot back: every operation reported. Then returned, since libdispatch traps
        // when a semaphore is released with a lower value than it was made with.
        for _ in 0..<256 { window.wait() }
        defer { for _ in 0..<256 { window.signal() } }
        guard SoakOperation.live.waitUntilNone(timeout: drainTimeout) else {
            FileHandle.standardError.write(Data("soak: \(SoakOperation.live.count) operations still alive \(drainTimeout) after their outcome\n".utf8))
            exit(1)
        }
        return Drained(requests: requests, heapInUse: Int(cmallocstats_read().inUse),
                       rssAnonymous: Sampler.resident().anonymous)
    }

    struct Outcomes {
        /// One bit per request, allocated up front: a Set of a million indices grows by
        /// doubling, and its steps (8, 16, 32 MiB) showed in the first runs' RSS as if the
        /// library grew.
        var seen: [UInt64]
        init(count: Int) { seen = [UInt64](repeating: 0, count: count / 64 + 1) }
        var reported = 0
        var duplicates = 0
        var unexpected = 0
        var firstUnexpected: String?
        var byKind: [Int: Int] = [:]

        mutating func record(index: Int, kind: Kind, asExpected: Bool, error: (any Error)?) {
            let (word, bit) = (index / 64, UInt64(1) << UInt64(index % 64))
            if seen[word] & bit == 0 {
                seen[word] |= bit
                reported += 1
            } else {
                duplicates += 1
            }
            byKind[kind.rawValue, default: 0] += 1
            if !asExpected {
                unexpected += 1
                if firstUnexpected == nil { firstUnexpected = "\(kind): \(error.map { "\($0)" } ?? "success")" }
            }
        }
    }
}

/// Counts the soak's live operations, and lets the sending thread wait until none is left.
///
/// Thread-safety: the count and the waiter sit in one struct behind one `Mutex`.
final class LiveOperations: Sendable {
    private struct State {
        var count = 0
        /// Signalled when the count reaches 0.
        var waiter: DispatchSemaphore?
    }
    private let state = Mutex(State())

    var count: Int { state.withLock { $0.count } }

    func add() { state.withLock { $0.count += 1 } }

    func remove() {
        let waiter = state.withLock { state -> DispatchSemaphore? in
            state.count -= 1
            guard state.count == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.signal()
    }

    /// Waits until no operation is alive; false if one still is after `timeout`.
    func waitUntilNone(timeout: DispatchTimeInterval) -> Bool {
        let waiter = DispatchSemaphore(value: 0)
        let waits = state.withLock { state -> Bool in
            guard state.count > 0 else { return false }
            state.waiter = waiter
            return true
        }
        return !waits || waiter.wait(timeout: .now() + timeout) == .success
    }
}

/// Writes `seconds,rssBytes,openFiles,threads,liveOperations,queued,heapInUse,heapFree,rssAnon,rssFile` every
/// 10 s, read from /proc and glibc's `mallinfo2` (see CMallocStats); a value that cannot be read ends the run
/// rather than being written as 0.
///
/// The two heap columns tell growth apart: bytes the program still holds (`heapInUse`: live
/// allocations, small and mapped) from bytes the allocator keeps but nobody holds (`heapFree`:
/// free chunks inside its arenas, which count in RSS until they are trimmed).
final class Sampler {
    private let timer: any DispatchSourceTimer
    private let handle: FileHandle

    init(path: String, manager: HTTPRequestOperationManager) {
        _ = FileManager.default.createFile(atPath: path, contents: Data("seconds,rssBytes,openFiles,threads,liveOperations,queued,heapInUse,heapFree,rssAnon,rssFile\n".utf8))
        handle = FileHandle(forWritingAtPath: path)!
        handle.seekToEndOfFile()
        let start = ContinuousClock.now
        let handle = handle
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "soak sampler"))
        timer.schedule(deadline: .now(), repeating: 10)
        timer.setEventHandler {
            let elapsed = ContinuousClock.now - start
            let heap = cmallocstats_read()
            let resident = Sampler.resident()
            let line = [Double(elapsed.components.seconds).rounded(), Double(resident.total), Double(Sampler.entries("/proc/self/fd")),
                        Double(Sampler.entries("/proc/self/task")), Double(Soak.SoakOperation.live.count),
                        Double(manager.operationQueue.operationCount), Double(heap.inUse), Double(heap.free),
                        Double(resident.anonymous), Double(resident.file)]
                .map { String(Int($0)) }.joined(separator: ",")
            handle.write(Data((line + "\n").utf8))
        }
    }

    func start() { timer.resume() }

    func stop() {
        timer.cancel()
        try? handle.close()
    }

    /// Resident memory in bytes from /proc/self/status: all of it, the anonymous part (heap,
    /// stacks: what a leak grows) and the file-backed part (pages of the libraries mapped in,
    /// which grow as code runs for the first time and are given back under pressure).
    static func resident() -> (total: Int, anonymous: Int, file: Int) {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
            FileHandle.standardError.write(Data("soak: cannot read /proc/self/status\n".utf8))
            exit(1)
        }
        func kilobytes(_ field: String) -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
                  let value = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) }) else {
                FileHandle.standardError.write(Data("soak: no \(field) in /proc/self/status\n".utf8))
                exit(1)
            }
            return value * 1024
        }
        return (kilobytes("VmRSS"), kilobytes("RssAnon"), kilobytes("RssFile"))
    }

    static func entries(_ folder: String) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else {
            FileHandle.standardError.write(Data("soak: cannot read \(folder)\n".utf8))
            exit(1)
        }
        return names.count
    }
}

/// SplitMix64: the mix replays from its seed.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
