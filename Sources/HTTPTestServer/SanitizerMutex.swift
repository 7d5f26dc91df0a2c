#if HTTPOPERATIONS_TSAN
import SanitizerLocks

/// Under ThreadSanitizer, a mutex it can see (see `SanitizerVisibleMutex`).
typealias Mutex = SanitizerVisibleMutex
#endif
