import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

/// One in-process server for the whole test run, started on first use.
let testServer: TestServer = {
    do {
        return try TestServer.start()
    } catch {
        fatalError("the test server did not start: \(error)")
    }
}()

/// The outcome of an HTTPRequestOperation as its blocks reported it.
enum Outcome: @unchecked Sendable {
    // @unchecked: the response object is whatever the serializer made; tests only read it.
    case success(Any?)
    case failure(any Error)

    var error: (any Error)? {
        if case .failure(let error) = self { return error }
        return nil
    }

    var urlErrorCode: URLError.Code? { (error as? URLError)?.code }

    /// The response object of a success, when it is bytes (`HTTPResponseSerializer`'s).
    var data: Data? {
        if case .success(let object) = self { return object as? Data }
        return nil
    }
}

/// Collects the outcomes of operations and lets a test wait for them. It counts every
/// delivery, so a duplicate is seen rather than overwritten.
final class OutcomeRecorder: Sendable {
    private let outcomes = Mutex<[ObjectIdentifier: [Outcome]]>([:])
    let done = TestSignal("operations to finish")

    /// Sets `operation`'s blocks to record into this recorder.
    func watch(_ operation: HTTPRequestOperation) {
        let id = ObjectIdentifier(operation)
        operation.setCompletionBlockWithSuccess({ _, object in
            self.outcomes.withLock { $0[id, default: []].append(.success(object)) }
            self.done.fire()
        }, failure: { _, error in
            self.outcomes.withLock { $0[id, default: []].append(.failure(error)) }
            self.done.fire()
        })
    }

    /// The first outcome `operation` reported.
    func outcome(of operation: HTTPRequestOperation) -> Outcome? {
        outcomes.withLock { $0[ObjectIdentifier(operation)]?.first }
    }

    /// How many outcomes `operation` reported: exactly one is right.
    func deliveries(of operation: HTTPRequestOperation) -> Int {
        outcomes.withLock { $0[ObjectIdentifier(operation)]?.count ?? 0 }
    }

    /// The first outcome of every operation.
    var all: [Outcome] { outcomes.withLock { $0.values.compactMap(\.first) } }

    /// Waits until every operation is finished, then a beat longer, so that an outcome
    /// delivered twice has had its chance to show before a test counts deliveries: the
    /// network thread runs one more pass (anything it decided goes out before), and the
    /// completion queue gets 100 ms for what was already dispatched.
    func settle(_ operations: [Operation], timeout: Duration = .seconds(60)) async throws {
        for operation in operations { try await waitUntilFinished(operation, timeout: timeout) }
        let networkPass = TestSignal("a network-thread pass")
        NetworkThread.shared.perform { networkPass.fire() }
        try await networkPass.wait(timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// Runs `operation` on a fresh queue (or `start()` when `queue` is nil) and returns how it ended.
func run(_ operation: HTTPRequestOperation, on queue: OperationQueue? = OperationQueue(),
         timeout: Duration = .seconds(20)) async throws -> Outcome {
    let recorder = OutcomeRecorder()
    recorder.watch(operation)
    if let queue { queue.addOperation(operation) } else { operation.start() }
    do {
        try await recorder.done.wait(timeout: timeout)
    } catch {
        printWhereItStood(operation, after: timeout)
        operation.cancel()
        throw error
    }
    return recorder.outcome(of: operation)!
}

/// A GET operation for `endpoint` on the test server.
func operation(_ endpoint: Endpoint, method: String = "GET", body: Data? = nil,
               headers: [String: String] = [:], timeout: TimeInterval = 20) -> HTTPRequestOperation {
    var request = URLRequest(url: testServer.url(endpoint), timeoutInterval: timeout)
    request.httpMethod = method
    request.httpBody = body
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    return HTTPRequestOperation(request: request)
}

/// The JSON object the server's echo endpoint returned.
func echoed(_ outcome: Outcome) throws -> [String: Any] {
    guard case .success(let object) = outcome, let data = object as? Data else {
        throw EchoError(outcome: "\(outcome)")
    }
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

struct EchoError: Error { let outcome: String }

/// Waits until `operation` is finished: after its callbacks, as Foundation sees it.
///
/// A watcher that depends on `operation` fires the signal, so no thread is held while
/// waiting. This used to park a dispatch worker in `Operation.waitUntilFinished()` per
/// operation: a probe that waited on the fault matrix's 100 cells at once used up
/// libdispatch's pool, and the queues that start operations then got a new worker about once
/// a second (cells started up to 17 s late under ThreadSanitizer).
func waitUntilFinished(_ operation: Operation, timeout: Duration = .seconds(20)) async throws {
    let finished = TestSignal("\(operation) to finish")
    let watcher = BlockOperation { finished.fire() }
    watcher.addDependency(operation)
    finishWatchers.addOperation(watcher)
    do {
        try await finished.wait(timeout: timeout)
    } catch {
        printWhereItStood(operation, after: timeout)
        print("  its watcher: ready \(watcher.isReady), executing \(watcher.isExecuting), finished \(watcher.isFinished)")
        throw error
    }
}

/// Prints where `operation` stood when a wait for it ran out: a wait that runs out only now
/// and then says whether the operation had finished (and its watcher missed it) or not.
func printWhereItStood(_ operation: Operation, after timeout: Duration) {
    var line = "\(operation) not seen finished after \(timeout): finished \(operation.isFinished), "
        + "executing \(operation.isExecuting), cancelled \(operation.isCancelled)"
    if let connection = operation as? URLConnectionOperation {
        line += ", paused \(connection.isPaused), \(connection.request.httpMethod ?? "GET") "
            + "\(connection.request.url?.absoluteString ?? "?"), status \((connection.response as? HTTPURLResponse)?.statusCode ?? 0), "
            + "error \(connection.error.map { "\($0)" } ?? "none")"
    }
    print(line)
}

/// Runs the watchers of ``waitUntilFinished(_:timeout:)``; each only fires a signal.
private let finishWatchers = OperationQueue()

/// A path in the temporary directory for a download; nothing is created.
func temporaryFile() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("httpop-\(UUID()).bin")
}

/// Removes a downloaded file and the resume data saved beside it.
func removeDownload(_ file: URL) {
    try? FileManager.default.removeItem(at: file)
    try? FileManager.default.removeItem(at: ResumeData.sidecarURL(for: file))
}

/// A random number generator that replays: SplitMix64 from a seed. Tests that use chance
/// print their seed, and `HTTPOPERATIONS_SEED=<n>` replays a run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    /// The seed this generator started from.
    let seed: UInt64

    /// A generator from `HTTPOPERATIONS_SEED`, or a fresh seed; prints which, with `test`.
    init(for test: String) {
        let seed = ProcessInfo.processInfo.environment["HTTPOPERATIONS_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        print("\(test): random seed \(seed) (replay with HTTPOPERATIONS_SEED=\(seed))")
        self.init(seed: seed)
    }

    init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A signal that fires when `operation` posts `name` (register it before the operation
/// starts); remove the observer when done.
func notificationSignal(_ name: Notification.Name, of operation: URLConnectionOperation) -> (TestSignal, any NSObjectProtocol) {
    let signal = TestSignal("\(name.rawValue)")
    let observer = NotificationCenter.default.addObserver(forName: name, object: operation, queue: nil) { _ in signal.fire() }
    return (signal, observer)
}

/// A ``FaultServer`` for a suite's static property: the suite cannot run without it.
func faultServer(_ script: @escaping @Sendable (String) -> [FaultStep]) -> FaultServer {
    do {
        return try FaultServer.start(script: script)
    } catch {
        fatalError("the fault server did not start: \(error)")
    }
}

/// Lines a test server's script records, in order, from any thread: duplicates are counted,
/// never merged.
final class LineLog: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    /// Everything recorded so far.
    var all: [String] { lines.withLock { $0 } }
}
