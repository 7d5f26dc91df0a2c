import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes a file only its owner can read (mode 0600), replacing it whole: resume-data
/// sidecars, which name the resource and its version. A temporary file is created with that
/// mode from the start (`O_CREAT|O_EXCL`, never widened by the umask later), written, and
/// renamed over the path, so a reader sees the old file or the new one, never half of it.
enum PrivateFile {
    /// Writes `data` to `url`.
    ///
    /// - Throws: `CocoaError(.fileWriteUnknown)` naming the failing call.
    static func write(_ data: Data, to url: URL) throws {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let descriptor = temporary.withUnsafeFileSystemRepresentation { path in
            path.map { open($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) } ?? -1
        }
        guard descriptor >= 0 else { throw failure("open", url) }
        let written = data.withUnsafeBytes { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        close(descriptor)
        let renamed = written && temporary.withUnsafeFileSystemRepresentation { from in
            url.withUnsafeFileSystemRepresentation { to in
                guard let from, let to else { return false }
                return rename(from, to) == 0
            }
        }
        guard renamed else {
            let error = failure(written ? "rename" : "write", url)
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }

    private static func failure(_ call: String, _ url: URL) -> CocoaError {
        CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path,
                                                 NSLocalizedDescriptionKey: "\(call): \(String(cString: strerror(errno)))"])
    }
}
