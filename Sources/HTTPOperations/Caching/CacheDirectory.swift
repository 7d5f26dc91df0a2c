import Foundation

/// The file operations of the disk tier, on one directory.
///
/// Files are written under a temporary name, with mode 0600 from the moment they exist,
/// and then `rename(2)`d over the entry's real name, which is atomic: a crash leaves at
/// most a temporary file (deleted by the next `scan()`), never half an entry under the
/// real name. There is no fsync: after a power loss an entry may be truncated, which
/// decoding detects, so it is only a miss.
///
/// Thread-safety: a value holding only the path; each call is a self-contained system
/// call sequence, and the storage decides which ones run under its lock.
struct CacheDirectory: Sendable {
    /// One entry file found by `scan()`.
    struct ScannedFile: Equatable {
        /// The file name inside the directory.
        var name: String
        /// The file size in bytes.
        var size: Int
        /// The modification date, which records the entry's last use.
        var lastUse: Date
    }

    /// The directory's file system path.
    let path: String

    /// Creates the directory (and its parents) with mode 0700 when it does not exist.
    /// An existing directory is used as is: it may be the user's and keep its mode.
    /// - Parameter url: The directory's file URL.
    init(creatingAt url: URL) throws {
        path = url.standardizedFileURL.path
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
    }

    /// The full path of a file in the directory.
    /// - Parameter name: The file name.
    /// - Returns: The directory path joined with `name`.
    func filePath(_ name: String) -> String {
        path + "/" + name
    }

    /// Lists the entry files, deleting temporary files left by a crash and entries of another
    /// format version. Files whose names
    /// are not ours are left alone and not counted: the directory may be shared and
    /// deleting unknown files would be hostile.
    /// - Returns: The entry files found, in no particular order.
    func scan() throws -> [ScannedFile] {
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
        var found: [ScannedFile] = []
        for name in names {
            if name.hasPrefix(CacheFileFormat.temporaryPrefix) {
                delete(name)
                continue
            }
            guard CacheFileFormat.isEntryFileName(name),
                  let attributes = try? FileManager.default.attributesOfItem(atPath: filePath(name)),
                  attributes[.type] as? FileAttributeType == .typeRegular
            else { continue }
            // An entry of another format version goes now, not when its key is next asked
            // for: version 1 kept digests of credentials and `Set-Cookie` values, version 2 a
            // varying response under its URL's own name, where version 3 looks for a plain one.
            if let header = FileHandle(forReadingAtPath: filePath(name)).map({ handle in
                defer { try? handle.close() }
                return handle.readData(ofLength: 6)
            }), CacheFileFormat.isOtherVersion(header: header) {
                delete(name)
                continue
            }
            let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
            let lastUse = attributes[.modificationDate] as? Date ?? .distantPast
            found.append(ScannedFile(name: name, size: size, lastUse: lastUse))
        }
        return found
    }

    /// Writes `data` to a new temporary file with mode 0600.
    /// - Parameter data: The complete file content.
    /// - Returns: The temporary file's name, or nil when it could not be written.
    func writeTemporaryFile(_ data: Data) -> String? {
        let name = CacheFileFormat.temporaryPrefix + UUID().uuidString
        // O_EXCL: never follow or reuse an existing file; 0600 from creation on.
        let descriptor = open(filePath(name), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        // The umask can only clear bits, but make the mode exact regardless.
        let written = fchmod(descriptor, 0o600) == 0 && writeAll(data, to: descriptor)
        let closed = close(descriptor) == 0
        guard written, closed else {
            delete(name)
            return nil
        }
        return name
    }

    /// Writes every byte of `data`, retrying short writes and interruptions.
    /// - Parameters:
    ///   - data: The bytes to write.
    ///   - descriptor: An open file descriptor.
    /// - Returns: True when all bytes were written.
    private func writeAll(_ data: Data, to descriptor: Int32) -> Bool {
        data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let count = write(descriptor, base + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += count
            }
            return true
        }
    }

    /// Atomically renames a temporary file to an entry's name, replacing any old entry.
    /// - Parameters:
    ///   - temporaryName: The name `writeTemporaryFile` returned.
    ///   - name: The entry file name.
    /// - Returns: True on success; on failure the temporary file is deleted.
    func moveIntoPlace(_ temporaryName: String, as name: String) -> Bool {
        guard rename(filePath(temporaryName), filePath(name)) == 0 else {
            delete(temporaryName)
            return false
        }
        return true
    }

    /// Deletes a file; a missing file is not an error.
    /// - Parameter name: The file name.
    func delete(_ name: String) {
        _ = unlink(filePath(name))
    }

    /// Reads a whole file.
    /// - Parameter name: The file name.
    /// - Returns: The content, or nil when the file cannot be read.
    func read(_ name: String) -> Data? {
        FileManager.default.contents(atPath: filePath(name))
    }

    /// What ``readMetadata(_:)`` found.
    struct MetadataRead {
        /// The metadata, or nil when the file is not an entry of this format version.
        var decoded: CacheFileFormat.VariantMetadata?
    }

    /// Reads an entry file's metadata, not its body.
    /// - Parameter name: The file name.
    /// - Returns: What was found, or nil when the file could not be read (gone, or no
    ///   descriptor left): nothing is known of it then.
    func readMetadata(_ name: String) -> MetadataRead? {
        guard let handle = FileHandle(forReadingAtPath: filePath(name)) else { return nil }
        defer { try? handle.close() }
        // A read that fails says nothing of the file; one that ends early (nil at the end of
        // the file) reads as the bytes there are, which then do not decode.
        guard let header = try? handle.read(upToCount: CacheFileFormat.headerLength) ?? Data() else { return nil }
        // Metadata is a few KiB; a length past 16 MiB is not ours.
        guard let end = CacheFileFormat.metadataEnd(header: header), end <= 16 << 20 else { return MetadataRead(decoded: nil) }
        guard let rest = try? handle.read(upToCount: end - CacheFileFormat.headerLength) ?? Data() else { return nil }
        return MetadataRead(decoded: CacheFileFormat.decodeVariantMetadata(header + rest))
    }

    /// Records a use in the file's modification date, so the LRU order survives a
    /// restart. Best effort: a failure only makes the order less exact.
    /// - Parameters:
    ///   - name: The file name.
    ///   - date: The time of use.
    func markUsed(_ name: String, at date: Date) {
        try? FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: filePath(name))
    }
}
