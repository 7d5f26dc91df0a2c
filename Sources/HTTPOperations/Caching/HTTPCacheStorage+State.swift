import Foundation

extension HTTPCacheStorage {
    /// What the disk index knows about one entry file.
    struct DiskFile: Equatable {
        /// The file size in bytes, counted against `diskCapacity`.
        var size: Int
        /// Changes whenever the file is replaced, so a reader that worked outside the
        /// lock can tell whether the file it read is still the indexed one.
        var generation: UInt64
    }

    /// All mutable state of the storage, kept behind its one Mutex.
    ///
    /// The disk-mutating methods here call `rename(2)` and `unlink(2)`: metadata-only
    /// system calls, made under the lock so the index and the directory never disagree.
    struct State {
        /// The memory tier, keyed by cache key.
        var memoryEntries: [String: CachedResponse] = [:]
        /// The memory tier's LRU order.
        var memoryOrder = LRUOrder<String>()
        /// Sum of `byteCount` over the memory tier.
        var memoryUsage = 0
        /// The disk index, keyed by file name.
        var diskFiles: [String: DiskFile] = [:]
        /// The disk tier's LRU order.
        var diskOrder = LRUOrder<String>()
        /// Sum of file sizes over the disk index.
        var diskUsage = 0
        /// The next generation number to hand out.
        var nextGeneration: UInt64 = 0

        /// Puts an entry in the memory tier, replacing the old one for its key and
        /// evicting least recently used entries until the tier fits its capacity.
        /// An entry larger than the capacity is not kept (the old one is still removed).
        /// - Parameters:
        ///   - response: The entry.
        ///   - capacity: The memory tier's capacity in bytes.
        mutating func putInMemory(_ response: CachedResponse, capacity: Int) {
            removeFromMemory(response.key)
            let size = response.byteCount
            guard capacity > 0, size <= capacity else { return }
            memoryEntries[response.key] = response
            memoryOrder.touch(response.key)
            memoryUsage += size
            while memoryUsage > capacity, let oldest = memoryOrder.oldest {
                removeFromMemory(oldest)
            }
        }

        /// Removes an entry from the memory tier; does nothing when it is absent.
        /// - Parameter key: The cache key.
        mutating func removeFromMemory(_ key: String) {
            guard let removed = memoryEntries.removeValue(forKey: key) else { return }
            memoryOrder.remove(key)
            memoryUsage -= removed.byteCount
        }

        /// Indexes a file found at startup or just written.
        /// - Parameters:
        ///   - name: The file name.
        ///   - size: The file size in bytes.
        mutating func indexDiskFile(_ name: String, size: Int) {
            if let old = diskFiles[name] { diskUsage -= old.size }
            diskFiles[name] = DiskFile(size: size, generation: nextGeneration)
            nextGeneration += 1
            diskOrder.touch(name)
            diskUsage += size
        }

        /// Renames a written temporary file into place and indexes it, then evicts
        /// least recently used files until the tier fits its capacity.
        /// - Parameters:
        ///   - temporaryName: The temporary file holding the entry.
        ///   - name: The entry file name.
        ///   - size: The file size in bytes.
        ///   - directory: The cache directory.
        ///   - capacity: The disk tier's capacity in bytes.
        mutating func moveDiskFileIntoPlace(
            _ temporaryName: String, as name: String, size: Int,
            directory: CacheDirectory, capacity: Int
        ) {
            guard directory.moveIntoPlace(temporaryName, as: name) else {
                removeDiskFile(name, directory: directory)
                return
            }
            indexDiskFile(name, size: size)
            evictDiskFiles(toFit: capacity, directory: directory)
        }

        /// Deletes least recently used files until the disk usage fits `capacity`.
        /// - Parameters:
        ///   - capacity: The disk tier's capacity in bytes.
        ///   - directory: The cache directory.
        mutating func evictDiskFiles(toFit capacity: Int, directory: CacheDirectory) {
            while diskUsage > capacity, let oldest = diskOrder.oldest {
                removeDiskFile(oldest, directory: directory)
            }
        }

        /// Deletes an entry file and forgets it; does nothing to the index when absent.
        /// - Parameters:
        ///   - name: The file name.
        ///   - directory: The cache directory.
        mutating func removeDiskFile(_ name: String, directory: CacheDirectory) {
            directory.delete(name)
            guard let removed = diskFiles.removeValue(forKey: name) else { return }
            diskOrder.remove(name)
            diskUsage -= removed.size
        }
    }
}
