import CCurl

/// Idle curl easy handles, reused from one transfer to the next.
///
/// `curl_easy_init` and `curl_easy_cleanup` allocate and free the handle and, on its first
/// transfer, its buffers; per small request that was several percent of the CPU and most of
/// the allocator's page faults (perf).
///
/// A handle comes back in one of two conditions:
/// - *clean*: put through `curl_easy_reset`, every option at its default;
/// - *primed*: its last transfer was a plain one (see ``CurlTransfer/isPlain``), which set
///   only the options every plain transfer sets again, so the next plain transfer sets just
///   what differs (its URL, its headers, its callbacks' data) — as a C program reuses a handle.
///   Resetting and setting everything again was ~3% of the network thread's time per small
///   GET (curl frees and re-copies every string option). Any other transfer gets a clean
///   handle, or a primed one reset first.
///
/// Neither condition keeps anything a later request could observe: what a handle keeps across
/// transfers (live connections, the DNS and TLS session caches) is matched by curl against
/// each new request's host and TLS settings before it is used.
///
/// Owned by ``CurlMulti``; confined to the network thread.
final class EasyHandlePool {
    private var clean: [UnsafeMutableRawPointer] = []
    private var primed: [UnsafeMutableRawPointer] = []
    /// At most this many idle handles are kept; more are freed. Enough for a busy queue's
    /// worth of transfers in flight without holding memory for a burst forever.
    private let capacity: Int

    init(capacity: Int = 64) {
        self.capacity = capacity
        clean.reserveCapacity(capacity)
        primed.reserveCapacity(capacity)
    }

    deinit {
        (clean + primed).forEach(curl_easy_cleanup)
    }

    /// A handle for a transfer; `primed` says whether it holds a plain transfer's options
    /// (else every option is at its default).
    ///
    /// - Parameter plain: Whether the transfer is a plain one, which prefers a primed handle.
    func take(plain: Bool) -> (easy: UnsafeMutableRawPointer, primed: Bool) {
        if plain, let easy = primed.popLast() { return (easy, true) }
        if let easy = clean.popLast() { return (easy, false) }
        if let easy = primed.popLast() {
            curl_easy_reset(easy)
            return (easy, false)
        }
        guard let easy = curl_easy_init() else {
            fatalError("curl_easy_init failed: out of memory")
        }
        return (easy, false)
    }

    /// Takes back a handle that is in no multi handle any more.
    ///
    /// - Parameter plain: Whether its last transfer was a plain one, so it may stay primed.
    func recycle(_ easy: UnsafeMutableRawPointer, plain: Bool) {
        guard clean.count + primed.count < capacity else { return curl_easy_cleanup(easy) }
        if plain {
            primed.append(easy)
        } else {
            curl_easy_reset(easy)
            clean.append(easy)
        }
    }

    /// Frees every idle handle (when the network thread stops).
    func removeAll() {
        (clean + primed).forEach(curl_easy_cleanup)
        clean.removeAll()
        primed.removeAll()
    }

    /// How many idle handles are kept, clean and primed (for tests).
    var idleCounts: (clean: Int, primed: Int) { (clean.count, primed.count) }
}
