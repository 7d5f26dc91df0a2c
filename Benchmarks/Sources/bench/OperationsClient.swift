import Foundation
import HTTPOperations
import HTTPTypes
import Synchronization

/// HTTPOperations as a user writes it: operations through a manager.
enum OperationsClient {
    /// Counts outcomes and signals when the last one is in. Not
    /// `waitUntilAllOperationsAreFinished()`: corelibs snapshots the queue's operations into
    /// an array and holds it until the last finishes, keeping every body alive.
    final class Counter: Sendable {
        private let tally = Mutex(Tally())
        private let done = DispatchSemaphore(value: 0)
        private let total: Int

        init(total: Int) { self.total = total }

        func record(ok: Bool, bytes: Int64) {
            let last = tally.withLock { tally -> Bool in
                if ok { tally.completed += 1; tally.bytes += bytes } else { tally.failed += 1 }
                return tally.completed + tally.failed == total
            }
            if last { done.signal() }
        }

        func wait() -> Tally {
            if total > 0 { done.wait() }
            return tally.withLock { $0 }
        }
    }

    /// A manager with the workload's concurrency and policy, answering bodies as `Data`.
    static func manager(_ workload: Workload) -> HTTPRequestOperationManager {
        let manager = HTTPRequestOperationManager()
        manager.operationQueue.maxConcurrentOperationCount = workload.inFlight
        manager.responseSerializer = HTTPResponseSerializer()
        if let policy = workload.securityPolicy { manager.securityPolicy = policy }
        return manager
    }

    /// Which door makes the operations: the AFNetworking-style one (a `URLRequest`) or the
    /// HTTPTypes one (an `HTTPRequest`; every status is an answer, so only a 200 counts).
    enum Door { case urlRequest, httpTypes }

    /// A GET of the workload's URL made by `door`, counted by `counter`.
    private static func operation(_ manager: HTTPRequestOperationManager, _ workload: Workload, _ counter: Counter,
                                  door: Door) throws -> HTTPRequestOperation {
        let operation = switch door {
        case .urlRequest: manager.httpRequestOperation(with: URLRequest(url: workload.url), success: nil, failure: nil)
        case .httpTypes: try manager.httpRequestOperation(for: workload.httpRequest)
        }
        return counted(operation, workload, counter, door: door)
    }

    /// `operation` with blocks that count its outcome (and, to a file, its file's size).
    private static func counted(_ operation: HTTPRequestOperation, _ workload: Workload, _ counter: Counter,
                                door: Door = .urlRequest) -> HTTPRequestOperation {
        let file = workload.file.map { URL(fileURLWithPath: $0) }
        operation.setCompletionBlockWithSuccess({ operation, _ in
            // The URLRequest door's serializer took only a 2xx; the HTTPTypes door's takes every
            // status, so its caller reads it (as its users do).
            if door == .httpTypes, operation.httpResponse?.status != .ok { return counter.record(ok: false, bytes: 0) }
            let bytes = file.map { ((try? FileManager.default.attributesOfItem(atPath: $0.path))?[.size] as? Int64) ?? 0 }
                ?? Int64(operation.responseData?.count ?? 0)
            counter.record(ok: true, bytes: bytes)
        }, failure: { _, _ in counter.record(ok: false, bytes: 0) })
        if let file {
            operation.destinationURL = file
            operation.retryPolicy = .none
        }
        return operation
    }

    static func run(_ workload: Workload, door: Door = .urlRequest,
                    configure: (HTTPRequestOperationManager) -> Void = { _ in }) throws -> Tally {
        let manager = manager(workload)
        configure(manager)
        let counter = Counter(total: workload.count)
        for _ in 0..<workload.count {
            manager.enqueue(try operation(manager, workload, counter, door: door))
        }
        return counter.wait()
    }

    /// The callback verb, `manager.get(urlString, success:failure:)`, all enqueued at once: the
    /// request serializer builds each request from the string, as the async client's does. The
    /// two differ in how the answer comes back and in how many wait (the async client keeps
    /// N in flight; this one enqueues all, as `operations` does). A file workload writes each
    /// body to the file after it arrived, as the async client does.
    static func verbs(_ workload: Workload) -> Tally {
        let manager = manager(workload)
        let counter = Counter(total: workload.count)
        let urlString = workload.url.absoluteString
        let file = workload.file.map { URL(fileURLWithPath: $0) }
        for _ in 0..<workload.count {
            // A request the serializer cannot build is answered by the failure block (on the
            // completion queue) and nil: counted once, there.
            manager.get(urlString, success: { _, object in
                let body = object as? Data ?? Data()
                if let file {
                    do { try body.write(to: file) } catch { return counter.record(ok: false, bytes: 0) }
                }
                counter.record(ok: true, bytes: Int64(body.count))
            }, failure: { _, _ in counter.record(ok: false, bytes: 0) })
        }
        return counter.wait()
    }

    static func chain(_ workload: Workload, throughManager: Bool) -> Tally {
        let manager = manager(workload)
        let counter = Counter(total: workload.count)
        var previous: Operation?
        for _ in 0..<workload.count {
            let next = counted(manager.httpRequestOperation(with: URLRequest(url: workload.url), success: nil, failure: nil),
                               workload, counter)
            if let previous { next.addDependency(previous) }
            if throughManager { manager.enqueue(next) } else { manager.operationQueue.addOperation(next) }
            previous = next
        }
        return counter.wait()
    }

    /// Operations cancelled before they start: start, the state machine, the completion queue,
    /// the finished announcement and the notifications, with no transfer.
    static func withoutIO(_ workload: Workload) -> Tally {
        let manager = manager(workload)
        let counter = Counter(total: workload.count)
        for _ in 0..<workload.count {
            let operation = HTTPRequestOperation(request: URLRequest(url: workload.url))
            operation.setCompletionBlockWithSuccess(nil, failure: { _, _ in counter.record(ok: true, bytes: 0) })
            operation.cancel()
            manager.enqueue(operation)
        }
        return counter.wait()
    }

    /// Empty BlockOperations: what Foundation's queue costs alone.
    static func blockOperations(_ workload: Workload) -> Tally {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = workload.inFlight
        let counter = Counter(total: workload.count)
        for _ in 0..<workload.count {
            queue.addOperation { counter.record(ok: true, bytes: 0) }
        }
        return counter.wait()
    }
}
