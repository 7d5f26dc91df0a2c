#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Checks, in debug builds, a class's promise that some of its fields are touched by one
/// thread only (the network thread, in the library): the first thread that checks becomes
/// the owner, and a check on any other thread stops the program. In release builds it is
/// empty: no storage, and ``check(_:)`` does nothing.
///
/// ``ThreadConfined`` checks every access with one: it turns the promise into a check without
/// tying the value to one particular thread, so a test can drive it from its own. Held as a
/// stored `let` of the object it checks (it is not copyable: the owner it records is that
/// object's).
struct OneThreadCheck: ~Copyable, Sendable {
    #if DEBUG
    /// The owner's `pthread_self()`, 0 until the first check.
    private let owner = Atomic<UInt>(0)
    #endif

    init() {}

    /// Stops the program, in debug builds, when called on a thread other than the first
    /// that called it. `entry` names the caller in the message.
    @inline(__always)
    borrowing func check(_ entry: StaticString = #function) {
        #if DEBUG
        let current = UInt(pthread_self())
        let (claimed, previous) = owner.compareExchange(expected: 0, desired: current, ordering: .relaxed)
        assert(claimed || previous == current, "\(entry) ran on a second thread; its fields are one thread's")
        #endif
    }
}
