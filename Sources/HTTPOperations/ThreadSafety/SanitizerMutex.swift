#if HTTPOPERATIONS_TSAN
import SanitizerLocks

/// Under ThreadSanitizer, a mutex it can see (see `SanitizerVisibleMutex`); otherwise the
/// standard `Synchronization.Mutex`.
typealias Mutex = SanitizerVisibleMutex
#endif
