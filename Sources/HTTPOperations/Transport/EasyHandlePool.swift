import CCurl

/// Idle curl easy handles, reused from one transfer to the next.
///
/// `curl_easy_init` and `curl_easy_cleanup` allocate and free the handle and, on its first
/// transfer, its buffers; per small request that was several percent of the CPU and most of
/// the allocator's page faults (perf). A recycled handle goes through `curl_easy_reset`, which
/// puts every option back to its default and keeps nothing a later request could observe:
/// what it keeps (live connections, the DNS and TLS session caches) is matched by curl
/// against each new request's host and TLS settings before it is used.
///
/// Owned by ``CurlMulti``; confined to the network thread.
final class EasyHandlePool {
    private var idle: [UnsafeMutableRawPointer] = []
    /// At most this many idle handles are kept; more are freed. Enough for a busy queue's
    /// worth of transfers in flight without holding memory for a burst forever.
    private let capacity: Int

    init(capacity: Int = 64) {
        self.capacity = capacity
        idle.reserveCapacity(capacity)
    }

    deinit {
        idle.forEach(curl_easy_cleanup)
    }

    /// A handle with every option at its default.
    func take() -> UnsafeMutableRawPointer {
        if let easy = idle.popLast() { return easy }
        guard let easy = curl_easy_init() else {
            fatalError("curl_easy_init failed: out of memory")
        }
        return easy
    }

    /// Takes back a handle that is in no multi handle any more.
    func recycle(_ easy: UnsafeMutableRawPointer) {
        guard idle.count < capacity else { return curl_easy_cleanup(easy) }
        curl_easy_reset(easy)
        idle.append(easy)
    }
}
