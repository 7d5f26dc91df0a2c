import Foundation
import Synchronization

/// Stores cache entries in a memory tier and an optional disk tier, each bounded in
/// bytes and evicting the least recently used entries first. A URL may have several entries,
/// one per variant (``CachedResponse/storageKey``).
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

    /// Finds the stored response a request selects among its URL's variants (see
    /// ``CachedResponse/storageKey``), in memory first, then on disk.
    ///
    /// The variant is found by its storage key, made from the request's fields and the names
    /// the URL was seen to vary on; after a restart, before those are known, the URL's newest
    /// file is read to learn them.
    /// - Parameters:
    ///   - key: The cache key.
    ///   - requestFields: The request's header fields.
    /// - Returns: The entry, or nil on a miss (including a file holding another key, or
    ///   a truncated or corrupt file, which is then deleted).
    func load(key: String, requestFields: [(name: String, value: String)] = []) -> CachedResponse? {
        let prefix = CacheFileFormat.urlPrefix(forKey: key)
        guard let names = state.withLock({ $0.variants[prefix]?.varyingNames }) else { return nil }
        if names.isEmpty { return learnVaryingNames(key: key, prefix: prefix, requestFields: requestFields) }
        for varyingNames in names {
            let storageKey = CachedResponse.storageKey(key: key, varyingNames: varyingNames, requestFields: requestFields)
            if let found = load(storageKey: storageKey) { return found }
        }
        return nil
    }

    /// Finds the entry stored under one storage key, in memory first, then on disk.
    private func load(storageKey: String) -> CachedResponse? {
        let fileName = CacheFileFormat.fileName(for: storageKey)
        let (inMemory, diskGeneration) = state.withLock { state -> (CachedResponse?, UInt64?) in
            if let entry = state.memoryEntries[storageKey] {
                state.memoryOrder.touch(storageKey)
                if state.diskFiles[fileName] != nil { state.diskOrder.touch(fileName) }
                return (entry, nil)
            }
            return (nil, state.diskFiles[fileName]?.generation)
        }
        if let inMemory { return inMemory }
        guard let directory, let diskGeneration else { return nil }
        let decoded = directory.read(fileName).flatMap(CacheFileFormat.decode)
        return accept(decoded, as: storageKey, fileName: fileName, generation: diskGeneration, directory: directory)
    }

    /// Reads the newest file of a URL whose variants are on disk only, from an earlier run:
    /// its `Vary` names the fields the request's variant is found by.
    private func learnVaryingNames(key: String, prefix: String, requestFields: [(name: String, value: String)]) -> CachedResponse? {
        guard let directory, let (fileName, generation) = state.withLock({ state in
            state.variants[prefix]?.onDisk.compactMap { name in state.diskFiles[name].map { (name, $0.generation) } }
                .max { $0.1 < $1.1 }
        }) else { return nil }
        let decoded = directory.read(fileName).flatMap(CacheFileFormat.decode)
        // Another URL's file (the two hashes collide): a miss; no file: deleted by `accept`.
        guard let decoded, decoded.key == key else {
            return decoded == nil ? accept(nil, as: key, fileName: fileName, generation: generation, directory: directory) : nil
        }
        let varyingNames = decoded.varyingNames
        state.withLock { $0.updateVariants(of: prefix) { $0.noteVarying(on: varyingNames) } }
        let storageKey = CachedResponse.storageKey(key: key, varyingNames: varyingNames, requestFields: requestFields)
        guard CacheFileFormat.fileName(for: storageKey) == fileName else { return load(storageKey: storageKey) }
        return accept(decoded, as: storageKey, fileName: fileName, generation: generation, directory: directory)
    }

    /// Acts on a file read and decoded outside the lock: promotes it to memory when it holds
    /// the entry asked for, deletes it when it did not decode.
    /// - Parameters:
    ///   - decoded: The file's entry, or nil when it did not decode.
    ///   - storageKey: The storage key asked for.
    ///   - fileName: The file read.
    ///   - generation: The file's generation when the lookup was made.
    ///   - directory: The cache directory.
    /// - Returns: The entry, or nil on a miss.
    private func accept(_ decoded: CachedResponse?, as storageKey: String, fileName: String, generation: UInt64,
                        directory: CacheDirectory) -> CachedResponse? {
        if let decoded, decoded.storageKey == storageKey {
            state.withLock { state in
                // Promote only if no newer entry replaced the file meanwhile.
                guard state.diskFiles[fileName]?.generation == generation else { return }
                state.diskOrder.touch(fileName)
                state.putInMemory(decoded, storageKey: storageKey, capacity: memoryCapacity)
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

    /// Stores an entry in both tiers, replacing the entry of the same variant (the same
    /// storage key) and no other. A tier too small for the entry does not keep it (and drops
    /// its old entry for the variant).
    /// - Parameter response: The entry to store.
    func store(_ response: CachedResponse) {
        let storageKey = response.storageKey
        let fileName = CacheFileFormat.fileName(for: storageKey)
        let varyingNames = response.varyingNames
        let written = writeTemporaryFile(for: response)
        state.withLock { state in
            state.putInMemory(response, storageKey: storageKey, capacity: memoryCapacity)
            if let directory {
                if let written {
                    state.moveDiskFileIntoPlace(
                        written.temporaryName, as: fileName, size: written.size,
                        directory: directory, capacity: diskCapacity)
                } else {
                    state.removeDiskFile(fileName, directory: directory)
                }
            }
            state.updateVariants(of: CacheFileFormat.urlPrefix(forKey: response.key)) { $0.noteVarying(on: varyingNames) }
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

    /// Removes every variant of a URL from both tiers. On disk that is every file whose name
    /// begins with the key's hash: in the rare case of another URL with the same hash, its
    /// files go too, which costs that URL a miss and nothing else.
    /// - Parameter key: The cache key.
    func remove(key: String) {
        let prefix = CacheFileFormat.urlPrefix(forKey: key)
        state.withLock { state in
            guard let record = state.variants[prefix] else { return }
            for storageKey in record.inMemory where CachedResponse.cacheKey(ofStorageKey: storageKey) == key {
                state.removeFromMemory(storageKey)
            }
            if let directory {
                for name in record.onDisk { state.removeDiskFile(name, directory: directory) }
            }
        }
    }

    /// Removes one variant from both tiers.
    /// - Parameter storageKey: Its ``CachedResponse/storageKey``.
    func remove(storageKey: String) {
        let fileName = CacheFileFormat.fileName(for: storageKey)
        state.withLock { state in
            state.removeFromMemory(storageKey)
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
            state.variants.removeAll()
        }
    }
}
