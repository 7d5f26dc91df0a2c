import Foundation
import Synchronization

/// The manager's `OperationQueue`: it holds an operation until every dependency has finished
/// and only then adds it, while still counting, listing, cancelling and waiting for it as
/// one of its own.
///
/// Foundation's queue on Linux walks every operation that is not ready each time a slot
/// frees, so an `addDependency` chain costs time quadratic in its length at
/// `maxConcurrentOperationCount` > 1 (Docs/Architecture.md, "Facts measured on this
/// toolchain"). Here a waiting operation costs nothing until
/// its last dependency reports its outcome; dependencies stay declared with
/// `addDependency`, so Foundation's own ordering still holds.
///
/// Dependencies that are ``URLConnectionOperation``s are watched through their outcome
/// observers (which run before they are marked finished); any other dependency makes the
/// operation go to the queue at once, where Foundation waits for it.
///
/// `cancelAllOperations()` cancels waiting operations too (they then go to the queue, which
/// finishes them as cancelled without sending anything), and
/// `waitUntilAllOperationsAreFinished()` waits for them. corelibs Foundation declares
/// `operations` and `operationCount` where a subclass cannot override them, so they list only
/// what Foundation holds; ``allOperations`` (the manager's `operations`) lists both.
final class DependencyAwareOperationQueue: OperationQueue, @unchecked Sendable {
    // @unchecked Sendable: its own mutable state is `waiting`, behind its one Mutex;
    // OperationQueue is thread-safe.

    /// Operations held until their dependencies finish, in the order they came.
    private let waiting = Mutex<[Handover<Operation>]>([])

    /// Adds `operation` now when it is ready, or once every dependency has finished.
    func addWhenReady(_ operation: Operation) {
        let pending = operation.dependencies.filter { !$0.isFinished }
        let watchable = pending.compactMap { $0 as? URLConnectionOperation }
        guard !pending.isEmpty, watchable.count == pending.count else {
            addOperation(operation)
            return
        }
        let handover = Handover(operation)
        waiting.withLock { $0.append(handover) }
        let remaining = Mutex(watchable.count)
        for dependency in watchable {
            dependency.whenOutcomeKnown { [weak self] _ in
                let last = remaining.withLock { count -> Bool in
                    count -= 1
                    return count == 0
                }
                // The dependency is not marked finished yet; Foundation still checks, and
                // starts the operation the moment it is.
                if last { self?.release(handover.value) }
            }
        }
    }

    /// Moves `operation` from the waiting list to the queue, unless it already left it.
    private func release(_ operation: Operation) {
        let held = waiting.withLock { waiting -> Bool in
            guard let index = waiting.firstIndex(where: { $0.value === operation }) else { return false }
            waiting.remove(at: index)
            return true
        }
        if held { addOperation(operation) }
    }

    private var waitingOperations: [Operation] {
        waiting.withLock { $0.map(\.value) }
    }

    /// The operations waiting for their dependencies, then those in the queue.
    var allOperations: [Operation] {
        waitingOperations + operations
    }

    /// The operations waiting for their dependencies plus those in the queue.
    var allOperationCount: Int {
        waiting.withLock { $0.count } + operationCount
    }

    /// Cancels every operation, waiting ones included; those go to the queue, which finishes
    /// them as cancelled without sending anything.
    override func cancelAllOperations() {
        let held = takeWaiting { _ in true }
        for operation in held { operation.cancel() }
        super.cancelAllOperations()
        for operation in held { addOperation(operation) }
    }

    /// Cancels `operations`; those in the waiting list go to the queue at once, which
    /// finishes them as cancelled without sending anything (corelibs' queue runs a cancelled
    /// operation whatever its dependencies: `cancel()` counts them all as finished).
    ///
    /// Left waiting, a cancelled operation would finish only once its dependencies report
    /// their outcome, which a dependency outside the manager that nobody starts never does:
    /// shutdown would wait for such an operation for good.
    func cancel(_ operations: [Operation]) {
        let cancelled = Set(operations.map(ObjectIdentifier.init))
        let held = takeWaiting { cancelled.contains(ObjectIdentifier($0)) }
        // Cancelled first: Foundation then finds them ready however their dependencies stand.
        for operation in operations { operation.cancel() }
        for operation in held { addOperation(operation) }
    }

    /// Takes the waiting operations that `isTaken` picks out of the waiting list, in order.
    private func takeWaiting(where isTaken: (Operation) -> Bool) -> [Operation] {
        waiting.withLock { waiting in
            var taken: [Operation] = []
            waiting.removeAll { handover in
                guard isTaken(handover.value) else { return false }
                taken.append(handover.value)
                return true
            }
            return taken
        }
    }

    /// Waits for the waiting operations too.
    override func waitUntilAllOperationsAreFinished() {
        for operation in waitingOperations { operation.waitUntilFinished() }
        super.waitUntilAllOperationsAreFinished()
    }
}
