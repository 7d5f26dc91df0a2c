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

    /// What the storage knows of one URL's variants (see ``CachedResponse/storageKey``).
    struct URLVariants {
        /// The sets of field names the URL's responses were seen to vary on, most recent
        /// first (usually one; a few when the server changed its `Vary`). Empty after a
        /// restart until a file of the URL is read.
        var varyingNames: [[String]] = []
        /// The storage keys of its responses in the memory tier.
        var inMemory: Set<String> = []
        /// The names of its entry files in the disk tier.
        var onDisk: Set<String> = []
        /// The most sets of names remembered.
        static let namesCapacity = 4

        /// Remembers that a response varied on `names`.
        mutating func noteVarying(on names: [String]) {
            varyingNames.removeAll { $0 == names }
            varyingNames.insert(names, at: 0)
            if varyingNames.count > Self.namesCapacity { varyingNames.removeLast() }
        }
    }

    /// All mutable state of the storage, kept behind its one Mutex.
    ///
    /// The disk-mutating methods here call `rename(2)` and `unlink(2)`: metadata-only
    /// system calls, made under the lock so the index and the directory never disagree.
    struct State {
        /// The memory tier, keyed by storage key.
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
        /// Each URL's variants in either tier, keyed by ``CacheFileFormat/urlPrefix(forKey:)``
        /// (a file name says no more of its URL); a URL leaves when its last variant does.
        var variants: [String: URLVariants] = [:]

        /// Puts an entry in the memory tier, replacing the old one for its key and
        /// evicting least recently used entries until the tier fits its capacity.
        /// An entry larger than the capacity is not kept (the old one is still removed).
        /// - Parameters:
        ///   - response: The entry.
        ///   - storageKey: Its ``CachedResponse/storageKey`` (a digest: made outside the lock).
        ///   - capacity: The memory tier's capacity in bytes.
        mutating func putInMemory(_ response: CachedResponse, storageKey: String, capacity: Int) {
            removeFromMemory(storageKey)
            let size = response.byteCount
            guard capacity > 0, size <= capacity else { return }
            memoryEntries[storageKey] = response
            memoryOrder.touch(storageKey)
            memoryUsage += size
            variants[CacheFileFormat.urlPrefix(forKey: response.key), default: URLVariants()].inMemory.insert(storageKey)
            while memoryUsage > capacity, let oldest = memoryOrder.oldest {
                removeFromMemory(oldest)
            }
        }

        /// Removes an entry from the memory tier; does nothing when it is absent.
        /// - Parameter storageKey: The entry's storage key.
        mutating func removeFromMemory(_ storageKey: String) {
            guard let removed = memoryEntries.removeValue(forKey: storageKey) else { return }
            memoryOrder.remove(storageKey)
            memoryUsage -= removed.byteCount
            updateVariants(of: CacheFileFormat.urlPrefix(forKey: removed.key)) { $0.inMemory.remove(storageKey) }
        }

        /// Changes a URL's variants record, and forgets the URL once it has none left.
        mutating func updateVariants(of prefix: String, _ change: (inout URLVariants) -> Void) {
            guard var record = variants[prefix] else { return }
            change(&record)
            variants[prefix] = record.inMemory.isEmpty && record.onDisk.isEmpty ? nil : record
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
            variants[CacheFileFormat.urlPrefix(ofFileName: name), default: URLVariants()].onDisk.insert(name)
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
            updateVariants(of: CacheFileFormat.urlPrefix(ofFileName: name)) { $0.onDisk.remove(name) }
        }
    }
}
