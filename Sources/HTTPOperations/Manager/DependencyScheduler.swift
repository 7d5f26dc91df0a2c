import Foundation
import Synchronization

/// Hands operations to an `OperationQueue` only once every dependency has finished.
///
/// Foundation's queue on Linux walks every operation that is not ready each time a slot
/// frees: a 10,000-long `addDependency` chain took ~13 s at `maxConcurrentOperationCount`
/// > 1 (DESIGN.md, measured on this toolchain). Here a waiting operation costs nothing until
/// its last dependency reports its outcome; dependencies stay declared with
/// `addDependency`, so Foundation's own ordering still holds.
///
/// Dependencies that are ``URLConnectionOperation``s are watched through their outcome
/// observers (which run before they are marked finished); any other dependency makes the
/// operation go to the queue at once, where Foundation waits for it.
final class DependencyScheduler: Sendable {
    private let queue: Handover<OperationQueue>

    init(queue: OperationQueue) {
        // OperationQueue is thread-safe; it is only handed operations.
        self.queue = Handover(queue)
    }

    func enqueue(_ operation: Operation) {
        let pending = operation.dependencies.filter { !$0.isFinished }
        let watchable = pending.compactMap { $0 as? URLConnectionOperation }
        guard !pending.isEmpty, watchable.count == pending.count else {
            queue.value.addOperation(operation)
            return
        }
        let remaining = Mutex(watchable.count)
        let handover = Handover(operation)
        let queue = self.queue
        for dependency in watchable {
            dependency.whenOutcomeKnown { _ in
                let last = remaining.withLock { count -> Bool in
                    count -= 1
                    return count == 0
                }
                // The dependency is not marked finished yet; Foundation still checks, and
                // starts the operation the moment it is.
                if last { queue.value.addOperation(handover.value) }
            }
        }
    }
}
