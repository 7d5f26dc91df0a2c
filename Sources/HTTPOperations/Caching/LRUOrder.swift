/// Least-recently-used order of a set of keys, with O(1) touch, remove and lookup of the
/// oldest key.
///
/// A doubly linked list threaded through a dictionary: each key stores its older and
/// newer neighbours, so no node objects or reference counting are needed and the value
/// stays a plain struct (it lives inside a Mutex-protected state).
struct LRUOrder<Key: Hashable> {
    /// The neighbours of one key in the list.
    private struct Links {
        /// The next less recently used key.
        var older: Key?
        /// The next more recently used key.
        var newer: Key?
    }

    /// The list links, keyed by member.
    private var links: [Key: Links] = [:]
    /// The least recently used key, evicted first.
    private(set) var oldest: Key?
    /// The most recently used key.
    private(set) var newest: Key?

    /// Creates an empty order.
    init() {}

    /// The number of keys.
    var count: Int { links.count }

    /// Whether `key` is a member.
    /// - Parameter key: The key to look up.
    /// - Returns: True when the key was touched and not removed since.
    func contains(_ key: Key) -> Bool { links[key] != nil }

    /// Marks `key` as the most recently used, adding it when absent.
    /// - Parameter key: The key that was used.
    mutating func touch(_ key: Key) {
        remove(key)
        links[key] = Links(older: newest, newer: nil)
        if let newest { links[newest]?.newer = key }
        newest = key
        if oldest == nil { oldest = key }
    }

    /// Removes `key`; does nothing when it is absent.
    /// - Parameter key: The key to forget.
    mutating func remove(_ key: Key) {
        guard let removed = links.removeValue(forKey: key) else { return }
        if let older = removed.older { links[older]?.newer = removed.newer } else { oldest = removed.newer }
        if let newer = removed.newer { links[newer]?.older = removed.older } else { newest = removed.older }
    }

    /// Forgets every key.
    mutating func removeAll() {
        links.removeAll()
        oldest = nil
        newest = nil
    }

    /// The keys from least to most recently used (for tests and diagnostics; O(n)).
    var keysFromOldest: [Key] {
        var keys: [Key] = []
        var cursor = oldest
        while let key = cursor {
            keys.append(key)
            cursor = links[key]?.newer
        }
        return keys
    }
}
