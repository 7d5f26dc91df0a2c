import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Releases the dependencies of operations being deinitialized one at a time, in a loop,
/// instead of one inside the other.
///
/// Foundation's `Operation` holds its dependencies strongly. Releasing the last operation of
/// a chain would release the one before it from inside its `deinit`, whose `deinit` would
/// release the one before that, and so on: a few stack frames per link, so a chain of tens of
/// thousands of operations would overflow a thread's stack (`DependencyChainTests` builds
/// such chains).
///
/// So ``URLConnectionOperation``'s `deinit` takes its dependencies off itself
/// (`removeDependency`) and hands them here. The outermost such `deinit` on a thread releases
/// them one by one; a `deinit` that this runs (the next link's) only adds its own to the
/// list and returns. The stack depth stays the same whatever the length of the chain, and
/// the list holds only what is not yet released: one operation, for a chain.
enum DependencyRelease {
    /// One thread's operations still to be released, and whether a `deinit` on this thread
    /// is releasing them already. Touched by its own thread only.
    private final class Pending {
        var operations: [Operation] = []
        var draining = false
    }

    /// The key of each thread's ``Pending``; the thread's exit releases it.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { pending in
            if let pending { Unmanaged<AnyObject>.fromOpaque(pending).release() }
        }
        precondition(created == 0, "pthread_key_create failed: \(created)")
        return key
    }()

    /// This thread's list, made on first use.
    private static var pending: Pending {
        if let stored = pthread_getspecific(key) {
            return Unmanaged<Pending>.fromOpaque(stored).takeUnretainedValue()
        }
        let pending = Pending()
        pthread_setspecific(key, Unmanaged.passRetained(pending).toOpaque())
        return pending
    }

    /// Releases `operations` (the caller hands over its references; nothing else may keep
    /// them through this call for them to be released here) on this thread, after any the
    /// thread is releasing already.
    ///
    /// - Parameter operations: Dependencies a `deinit` took off its operation.
    static func release(_ operations: consuming [Operation]) {
        let pending = Self.pending
        var handedOver = consume operations
        pending.operations.append(contentsOf: handedOver)
        // The list holds them now; the caller's array must not outlive the loop below, or
        // its release would start the recursion again after it.
        handedOver = []
        guard !pending.draining else { return }
        pending.draining = true
        // Last in, first out: a chain's next link comes in as the one before it goes.
        while let next = pending.operations.popLast() {
            // Perhaps the last reference: its deinit runs here and adds its own dependencies.
            _ = consume next
        }
        pending.draining = false
    }
}
