import Foundation
import Synchronization

/// Stores cache entries in a memory tier and an optional disk tier, each bounded in
/// bytes and evicting the least recently used entries first.
///
/// The memory tier counts `CachedResponse.byteCount`; the disk tier counts file sizes,
/// one file per entry named by `CacheFileFormat.fileName(for:)`. A disk hit is promoted
/// to memory. Files whose names are not ours are never touched; entry files that do not
/// decode are deleted when a load finds them.
///
/// Thread-safety: all mutable state (both tiers' contents, LRU orders, usage and the disk
/// index) is one `State` behind one `Mutex`. Disk I/O runs on the caller's thread: the
/// slow parts — encoding and writing a temporary file, reading and decoding a file,
/// updating a modification date — run outside the lock; the quick `rename(2)` and
/// `unlink(2)` calls run under it so the index always matches the directory. A reader
/// that worked outside the lock checks the file's generation before acting on the
/// result, so a concurrent replacement is never undone.
final class HTTPCacheStorage: Sendable {
    /// The memory tier's bound, in bytes of `byteCount`.
    let memoryCapacity: Int
    /// The disk tier's bound, in bytes on disk; 0 when there is no disk tier.
    let diskCapacity: Int
    /// The disk tier's directory, or nil when there is none.
    let directory: CacheDirectory?
    /// See the thread-safety note.
    private let state = Mutex(State())

    /// Creates a storage, creating and scanning the disk directory.
    ///
    /// The disk tier exists only with a directory and a positive `diskCapacity`. Files of
    /// an earlier run are indexed with their modification date as last use; temporary
    /// files left by a crash are deleted; files over capacity are evicted.
    /// - Parameters:
    ///   - memoryCapacity: The memory tier's bound in bytes; 0 disables it.
    ///   - diskCapacity: The disk tier's bound in bytes; 0 disables it.
    ///   - directory: Where the disk tier keeps its files.
    /// - Throws: When the directory cannot be created or listed.
    init(memoryCapacity: Int, diskCapacity: Int, directory: URL?) throws {
        self.memoryCapacity = max(0, memoryCapacity)
        guard let directory, diskCapacity > 0 else {
            self.diskCapacity = 0
            self.directory = nil
            return
        }
        let cacheDirectory = try CacheDirectory(creatingAt: directory)
        self.diskCapacity = diskCapacity
        self.directory = cacheDirectory
        let scanned = try cacheDirectory.scan().sorted { $0.lastUse < $1.lastUse }
        state.withLock { state in
            for file in scanned {
                state.indexDiskFile(file.name, size: file.size)
            }
            state.evictDiskFiles(toFit: diskCapacity, directory: cacheDirectory)
        }
    }

    /// Bytes used by the memory tier.
    var memoryUsage: Int { state.withLock { $0.memoryUsage } }

    /// Bytes used by the disk tier.
    var diskUsage: Int { state.withLock { $0.diskUsage } }

    /// Finds the entry stored under `key`, in memory first, then on disk.
    /// - Parameter key: The cache key.
    /// - Returns: The entry, or nil on a miss (including a file holding another key, or
    ///   a truncated or corrupt file, which is then deleted).
    func load(key: String) -> CachedResponse? {
        let fileName = CacheFileFormat.fileName(for: key)
        let (inMemory, diskGeneration) = state.withLock { state -> (CachedResponse?, UInt64?) in
            if let entry = state.memoryEntries[key] {
                state.memoryOrder.touch(key)
                if state.diskFiles[fileName] != nil { state.diskOrder.touch(fileName) }
                return (entry, nil)
            }
            return (nil, state.diskFiles[fileName]?.generation)
        }
        if let inMemory { return inMemory }
        guard let directory, let diskGeneration else { return nil }
        return loadFromDisk(key: key, fileName: fileName, generation: diskGeneration, directory: directory)
    }

    /// Reads and decodes an entry file outside the lock, then promotes or deletes it.
    /// - Parameters:
    ///   - key: The cache key asked for.
    ///   - fileName: The key's file name.
    ///   - generation: The file's generation when the lookup was made.
    ///   - directory: The cache directory.
    /// - Returns: The entry, or nil on a miss.
    private func loadFromDisk(key: String, fileName: String, generation: UInt64, directory: CacheDirectory) -> CachedResponse? {
        let decoded = directory.read(fileName).flatMap(CacheFileFormat.decode)
        if let decoded, decoded.key == key {
            state.withLock { state in
                // Promote only if no newer entry replaced the file meanwhile.
                guard state.diskFiles[fileName]?.generation == generation else { return }
                state.diskOrder.touch(fileName)
                state.putInMemory(decoded, capacity: memoryCapacity)
            }
            directory.markUsed(fileName, at: Date())
            return decoded
        }
        // A valid file for another key whose name collides: a miss, but keep the file.
        if decoded != nil { return nil }
        state.withLock { state in
            guard state.diskFiles[fileName]?.generation == generation else { return }
            state.removeDiskFile(fileName, directory: directory)
        }
        return nil
    }

    /// Stores an entry in both tiers, replacing the entry with the same key. A tier too
    /// small for the entry does not keep it (and drops its old entry for the key).
    /// - Parameter response: The entry to store.
    func store(_ response: CachedResponse) {
        let fileName = CacheFileFormat.fileName(for: response.key)
        let written = writeTemporaryFile(for: response)
        state.withLock { state in
            state.putInMemory(response, capacity: memoryCapacity)
            guard let directory else { return }
            if let written {
                state.moveDiskFileIntoPlace(
                    written.temporaryName, as: fileName, size: written.size,
                    directory: directory, capacity: diskCapacity)
            } else {
                state.removeDiskFile(fileName, directory: directory)
            }
        }
    }

    /// Encodes an entry and writes it to a temporary file (outside the lock).
    /// - Parameter response: The entry to write.
    /// - Returns: The temporary file and its size, or nil when there is no disk tier, the
    ///   entry speaks for an identity, exceeds the capacity, or writing failed.
    private func writeTemporaryFile(for response: CachedResponse) -> (temporaryName: String, size: Int)? {
        // A response that speaks for someone (credentials, cookies, a partition) stays in
        // memory: nothing of who they are reaches the folder.
        guard let directory, response.identityDigest == nil,
              let file = try? CacheFileFormat.encode(response),
              file.count <= diskCapacity,
              let temporaryName = directory.writeTemporaryFile(file)
        else { return nil }
        return (temporaryName, file.count)
    }

    /// Removes the entry stored under `key` from both tiers.
    /// - Parameter key: The cache key.
    func remove(key: String) {
        let fileName = CacheFileFormat.fileName(for: key)
        state.withLock { state in
            state.removeFromMemory(key)
            if let directory { state.removeDiskFile(fileName, directory: directory) }
        }
    }

    /// Removes every entry from both tiers; files that are not ours stay.
    func removeAll() {
        state.withLock { state in
            state.memoryEntries.removeAll()
            state.memoryOrder.removeAll()
            state.memoryUsage = 0
            if let directory {
                for name in state.diskFiles.keys { directory.delete(name) }
            }
            state.diskFiles.removeAll()
            state.diskOrder.removeAll()
            state.diskUsage = 0
        }
    }
}
