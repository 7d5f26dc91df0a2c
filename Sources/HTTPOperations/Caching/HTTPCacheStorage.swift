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
    /// the URL was seen to vary on; after a restart, before those are known, the metadata of the
    /// URL's newest variant file is read to learn them. A variant that varies on other names
    /// than the newest (the server changed its `Vary`) is not found after a restart: a miss,
    /// and its file goes when the tier evicts it.
    /// - Parameters:
    ///   - key: The cache key.
    ///   - requestFields: The request's header fields.
    /// - Returns: The entry, or nil on a miss (including a file holding another key, or
    ///   a truncated or corrupt file, which is then deleted).
    func load(key: String, requestFields: [(name: String, value: String)] = []) -> CachedResponse? {
        let prefix = CacheFileFormat.urlPrefix(forKey: key)
        guard let known = state.withLock({ $0.variants[prefix]?.varyingNames }) else { return nil }
        var names = known.isEmpty ? learnVaryingNames(key: key, prefix: prefix) : known
        // A response that varies on nothing is a candidate for every request (kept beside the
        // varying ones when the server began or stopped sending `Vary`).
        if !names.contains([]) { names.append([]) }
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
        // A file that cannot be read now (gone, or no descriptor left) is a miss, not a
        // reason to delete it; one that reads but does not decode is deleted.
        guard let directory, let generation = diskGeneration, let file = directory.read(fileName) else { return nil }
        return accept(CacheFileFormat.decode(file), as: storageKey, fileName: fileName, generation: generation, directory: directory)
    }

    /// Learns which fields a URL varies on when its variants are on disk only, from an
    /// earlier run: from the metadata (not the body) of its newest variant file. The names are
    /// remembered, so this runs once per URL: with `[]` when the URL has no variant file, or
    /// when that file is another URL's (the hashes collide: its own variants stay unfound, a
    /// miss). A file that cannot be read now teaches nothing and is tried again next time; one
    /// that is not an entry is deleted.
    /// - Returns: The sets of names to look the request's variant up with.
    private func learnVaryingNames(key: String, prefix: String) -> [[String]] {
        let newest = state.withLock { state in
            state.variants[prefix]?.onDisk.filter(CacheFileFormat.isVariantFileName)
                .compactMap { name in state.diskFiles[name].map { (name: name, generation: $0.generation) } }
                .max { $0.generation < $1.generation }
        }
        var learned: [String] = []
        if let directory, let newest {
            guard let head = directory.readMetadata(newest.name) else { return [] }
            guard let metadata = head.decoded else {
                _ = accept(nil, as: key, fileName: newest.name, generation: newest.generation, directory: directory)
                return []
            }
            if metadata.key == key { learned = metadata.varyingNames }
        }
        state.withLock { $0.updateVariants(of: prefix) { $0.noteVarying(on: learned) } }
        return [learned]
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
            // Only if the file is still the one indexed: else a newer entry replaced it, or an
            // invalidation removed it, while it was read, and this one must not be the answer.
            let current = state.withLock { state in
                guard state.diskFiles[fileName]?.generation == generation else { return false }
                state.diskOrder.touch(fileName)
                state.putInMemory(decoded, storageKey: storageKey, capacity: memoryCapacity)
                return true
            }
            guard current else { return nil }
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
