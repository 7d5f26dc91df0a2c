import CCurl

/// Idle curl easy handles, reused from one transfer to the next.
///
/// `curl_easy_init` and `curl_easy_cleanup` allocate and free the handle and, on its first
/// transfer, its buffers; per small request that would be several percent of the CPU and
/// most of the allocator's page faults (Docs/Performance.md, "Fixed so far").
///
/// A handle comes back in one of two conditions:
/// - *clean*: put through `curl_easy_reset`, every option at its default;
/// - *primed*: its last transfer was a plain one (see ``CurlTransfer/isPlain``) under a
///   security policy, which set only the options every plain transfer under that policy sets
///   again (the policy's anchors among them), so the next plain transfer under the same policy
///   sets just what differs (its URL, its headers, its callbacks' data) — as a C program
///   reuses a handle. Resetting and setting everything again cost the network thread time on
///   every small GET (curl frees and re-copies every string option; Docs/Performance.md). Any
///   other transfer gets a clean handle, or a primed one reset first: a handle primed under
///   one policy never carries its anchors into a transfer under another.
///
/// Neither condition keeps anything a later request could observe: what a handle keeps across
/// transfers (live connections, the DNS and TLS session caches) is matched by curl against
/// each new request's host and TLS settings before it is used.
///
/// Owned by ``CurlMulti``; confined to the network thread.
final class EasyHandlePool {
    private var clean: [UnsafeMutableRawPointer] = []
    /// Primed handles and the policy each was primed under, most recent last. One policy
    /// (usually the default one) serves most transfers, so a match is found at the end.
    private var primed: [(easy: UnsafeMutableRawPointer, policy: SecurityPolicy)] = []
    /// At most this many idle handles are kept; more are freed. Enough for a busy queue's
    /// worth of transfers in flight without holding memory for a burst forever.
    private let capacity: Int

    init(capacity: Int = 64) {
        self.capacity = capacity
        clean.reserveCapacity(capacity)
        primed.reserveCapacity(capacity)
    }

    deinit {
        (clean + primed.map(\.easy)).forEach(curl_easy_cleanup)
    }

    /// A handle for a transfer; `primed` says whether it holds the options of a plain transfer
    /// under the same policy (else every option is at its default).
    ///
    /// - Parameter policy: The transfer's policy when it is a plain one, which prefers a
    ///   handle primed under that policy; nil for any other transfer.
    func take(primedFor policy: SecurityPolicy?) -> (easy: UnsafeMutableRawPointer, primed: Bool) {
        if let policy, let index = primed.lastIndex(where: { $0.policy == policy }) {
            return (primed.remove(at: index).easy, true)
        }
        if let easy = clean.popLast() { return (easy, false) }
        // The handle primed longest ago: the most recent ones serve the policy in use.
        if !primed.isEmpty {
            let easy = primed.removeFirst().easy
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
    /// - Parameter policy: The policy of its last transfer when that was a plain one, so it
    ///   may stay primed for the next under the same policy; nil to reset it.
    func recycle(_ easy: UnsafeMutableRawPointer, primedFor policy: SecurityPolicy?) {
        guard clean.count + primed.count < capacity else { return curl_easy_cleanup(easy) }
        if let policy {
            primed.append((easy, policy))
        } else {
            curl_easy_reset(easy)
            clean.append(easy)
        }
    }

    /// Frees every idle handle (when the network thread stops).
    func removeAll() {
        (clean + primed.map(\.easy)).forEach(curl_easy_cleanup)
        clean.removeAll()
        primed.removeAll()
    }

    /// How many idle handles are kept, clean and primed (for tests).
    var idleCounts: (clean: Int, primed: Int) { (clean.count, primed.count) }
}
