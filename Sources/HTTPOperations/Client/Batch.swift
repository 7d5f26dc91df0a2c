import Foundation
import Synchronization

extension HTTPRequestOperationManager {
    /// Called as each operation of a batch finishes: how many have, of how many.
    public typealias BatchProgress = @Sendable (_ finished: Int, _ total: Int) -> Void
    /// Called once every operation of a batch has finished, with them all.
    public typealias BatchCompletion = @Sendable (_ operations: [URLConnectionOperation]) -> Void

    /// `operations` followed by a completion operation that depends on all of them.
    ///
    /// `progress` runs as each operation's outcome is known, after its own success or failure
    /// block, on that operation's completion queue. The completion operation runs after every
    /// one of them has finished — so after all their blocks and every progress call. An empty
    /// batch's completion runs as soon as it is enqueued. A manager's shutdown does not cancel
    /// it, and a manager that has shut down runs it (with its refused operations) all the same:
    /// its `name` marks it, so leave that as it is.
    ///
    /// - Returns: The operations and, last, the completion operation; enqueue them all (or use
    ///   ``enqueueBatch(of:progress:completion:)``).
    public static func batch(of operations: [URLConnectionOperation], progress: BatchProgress? = nil,
                             completion: BatchCompletion? = nil) -> [Operation] {
        let finished = Mutex(0)
        let total = operations.count
        for operation in operations {
            operation.whenOutcomeKnown { _ in
                let count = finished.withLock { count -> Int in
                    count += 1
                    return count
                }
                progress?(count, total)
            }
        }
        let all = Handover(operations)
        let done = BlockOperation { completion?(all.value) }
        done.name = Self.batchCompletionName
        operations.forEach(done.addDependency)
        return operations + [done]
    }

    /// The `name` of a batch's completion operation: how the manager knows it (a shutdown
    /// never swallows it; see ``batch(of:progress:completion:)``).
    static let batchCompletionName = "HTTPOperations.batch-completion"

    /// Where a batch completion the manager refused runs, once its refused operations finished:
    /// one at a time, off the manager's queue.
    static let refusedBatchCompletions: OperationQueue = {
        let queue = OperationQueue()
        queue.name = "HTTPOperations.refused-batch-completions"
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    /// Makes a batch (see ``batch(of:progress:completion:)``) and enqueues it.
    @discardableResult
    public func enqueueBatch(of operations: [URLConnectionOperation], progress: BatchProgress? = nil,
                             completion: BatchCompletion? = nil) -> [Operation] {
        let batch = Self.batch(of: operations, progress: progress, completion: completion)
        batch.forEach(enqueue)
        return batch
    }
}
