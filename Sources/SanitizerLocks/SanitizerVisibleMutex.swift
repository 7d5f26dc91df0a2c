#if canImport(Glibc)
import Glibc
#endif

/// A mutex ThreadSanitizer can see, for builds with `-sanitize=thread` only.
///
/// The standard library's `Synchronization.Mutex` locks with raw futex calls on Linux, which
/// ThreadSanitizer does not intercept: every access under it is reported as a race (measured
/// on Swift 6.3.1: eight threads appending to one `Mutex<[Int]>` produce a report). Built with
/// `-DHTTPOPERATIONS_TSAN`, each module of this package names this type `Mutex` instead, so the
/// sanitizer checks the real synchronization rather than drowning it in false reports. It has
/// the shape of `Synchronization.Mutex` that the package uses: `init(_:)` and `withLock(_:)`.
public final class SanitizerVisibleMutex<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched between pthread_mutex_lock and unlock.
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// A mutex guarding `value`.
    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
