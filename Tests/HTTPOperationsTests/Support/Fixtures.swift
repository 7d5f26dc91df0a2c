import Foundation
import HTTPOperations
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
}

/// Collects the outcomes of operations and lets a test wait for them.
final class OutcomeRecorder: Sendable {
    private let outcomes = Mutex<[ObjectIdentifier: Outcome]>([:])
    let done = TestSignal("operations to finish")

    /// Sets `operation`'s blocks to record into this recorder.
    func watch(_ operation: HTTPRequestOperation) {
        let id = ObjectIdentifier(operation)
        operation.setCompletionBlockWithSuccess({ _, object in
            self.outcomes.withLock { $0[id] = .success(object) }
            self.done.fire()
        }, failure: { _, error in
            self.outcomes.withLock { $0[id] = .failure(error) }
            self.done.fire()
        })
    }

    func outcome(of operation: HTTPRequestOperation) -> Outcome? {
        outcomes.withLock { $0[ObjectIdentifier(operation)] }
    }

    var all: [Outcome] { outcomes.withLock { Array($0.values) } }
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
func waitUntilFinished(_ operation: Operation, timeout: Duration = .seconds(20)) async throws {
    let finished = TestSignal("\(operation) to finish")
    DispatchQueue.global().async {
        operation.waitUntilFinished()
        finished.fire()
    }
    try await finished.wait(timeout: timeout)
}

/// A path in the temporary directory for a download; nothing is created.
func temporaryFile() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("httpop-\(UUID()).bin")
}

/// Removes a downloaded file and the resume data saved beside it.
func removeDownload(_ file: URL) {
    try? FileManager.default.removeItem(at: file)
    try? FileManager.default.removeItem(at: ResumeData.sidecarURL(for: file))
}
