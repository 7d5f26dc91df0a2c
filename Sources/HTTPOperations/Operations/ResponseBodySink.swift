import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where one operation's response body goes, and how much of it is held. Network thread only.
///
/// Three kinds: memory (the default), a destination file the operation owns, and an output
/// stream the caller owns. Memory and files can be truncated when a server answers a resume
/// with the whole resource again; a caller's stream cannot, so such a resume fails instead of
/// splicing.
final class ResponseBodySink {
    private enum Storage {
        case memory
        case file(FileHandle, URL)
        case stream(OutputStream)
    }

    private var storage: Storage
    /// Bytes for the file not yet written: chunks from curl (16 KiB) are gathered into one
    /// write(2) of up to `fileBufferSize`. Counted in ``heldBytes``; written by ``flush()``.
    private var pending: UnsafeMutableRawBufferPointer?
    private var pendingCount = 0
    /// Large enough that system calls stop mattering next to the copy: 400 write(2) calls
    /// for 100 MiB instead of 6,400.
    static let fileBufferSize = 256 << 10
    /// The body, when it goes to memory.
    private let memory = MemoryBody()
    /// Bytes held: in memory, on disk, or written to the stream.
    private(set) var heldBytes: Int64 = 0

    /// A sink for memory (`destination` and `stream` nil), a destination file, or a stream.
    ///
    /// - Parameters:
    ///   - destination: A file to write; created if missing.
    ///   - continuing: Keep what the file holds and append (a resume); else empty it.
    /// - Throws: `URLError(.cannotCreateFile)` or `.cannotOpenFile` when the file cannot be opened,
    ///   `.cannotWriteToFile` when a file to start again cannot be emptied.
    init(destination: URL?, stream: OutputStream?, continuing: Bool) throws {
        if let destination {
            let handle = try Self.openFile(destination)
            let size = Int64((try? handle.seekToEnd()) ?? 0)
            if continuing {
                // What is really on disk is what we hold, whatever a saved offset says.
                heldBytes = size
            } else if size > 0 {
                // Only a file that holds bytes is truncated: ext4 treats a truncation to zero
                // as "replace via truncate" and flushes the whole new file from close(2)
                // (measured: 37-42 ms on the network thread for 100 MiB).
                do {
                    try handle.truncate(atOffset: 0)
                } catch {
                    throw URLError(.cannotWriteToFile, url: destination, description: "Emptying \(destination.path) failed: \(error).")
                }
            }
            storage = .file(handle, destination)
        } else if let stream {
            stream.open()
            storage = .stream(stream)
        } else {
            storage = .memory
        }
    }

    /// Opens `url` for reading and writing, creating it (mode 0644 less the umask) if missing.
    ///
    /// One open(2) with O_CREAT: `FileManager.createFile` writes a temporary file and renames
    /// it over the path, two more system calls and a directory update per download.
    private static func openFile(_ url: URL) throws -> FileHandle {
        let descriptor = url.withUnsafeFileSystemRepresentation { path -> Int32 in
            guard let path else { return -1 }
            return Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        }
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            let code: URLError.Code = errno == ENOENT || errno == EACCES || errno == EROFS ? .cannotCreateFile : .cannotOpenFile
            throw URLError(code, url: url, description: "Cannot open \(url.path) for writing: \(reason).")
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// The destination file, when there is one.
    var destination: URL? {
        if case .file(_, let url) = storage { return url }
        return nil
    }

    /// Whether the body is held in ``memory`` (rather than in a file or a caller's stream).
    var isMemory: Bool {
        if case .memory = storage { return true }
        return false
    }

    /// Whether `truncate()` can start the body again from byte 0.
    var canRestart: Bool {
        if case .stream = storage { return false }
        return true
    }

    /// Reserves room for `length` more bytes in memory; pages never written are not resident.
    func reserve(_ length: Int64) {
        if case .memory = storage, length > 0 {
            memory.reserve(Int(min(length, 1 << 30)))
        }
    }

    /// Hands over the body held in memory; the sink holds none afterwards.
    func takeMemory() -> Data {
        memory.take()
    }

    /// Appends `bytes`.
    ///
    /// - Throws: `URLError(.cannotWriteToFile)` with the reason.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        switch storage {
        case .memory:
            memory.append(bytes)
        case .file(let handle, let url):
            // write(2) on the descriptor: FileHandle.write(contentsOf:) costs more than the
            // system call itself (measured: 0.61x raw libcurl at one call per 16 KiB chunk).
            if pendingCount + bytes.count > Self.fileBufferSize {
                try flush()
            }
            if bytes.count >= Self.fileBufferSize {
                try Self.writeAll(bytes, to: handle.fileDescriptor, url: url)
            } else {
                let buffer = pending ?? .allocate(byteCount: Self.fileBufferSize, alignment: 16)
                pending = buffer
                UnsafeMutableRawBufferPointer(rebasing: buffer[pendingCount..<(pendingCount + bytes.count)]).copyMemory(from: bytes)
                pendingCount += bytes.count
            }
        case .stream(let stream):
            var offset = 0
            while offset < bytes.count {
                let written = stream.write(bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self),
                                           maxLength: bytes.count - offset)
                guard written > 0 else {
                    let reason = stream.streamError.map { "\($0)" } ?? "the stream accepted no bytes"
                    throw URLError(.cannotWriteToFile, url: nil, description: "Writing the response body failed: \(reason).")
                }
                offset += written
            }
        }
        heldBytes += Int64(bytes.count)
    }

    /// Writes the bytes gathered for the file. On failure they are dropped and no longer
    /// counted in ``heldBytes``, which then says what the file holds.
    ///
    /// - Throws: `URLError(.cannotWriteToFile)` with the reason.
    func flush() throws {
        guard case .file(let handle, let url) = storage, let pending, pendingCount > 0 else { return }
        let count = pendingCount
        pendingCount = 0
        do {
            try Self.writeAll(UnsafeRawBufferPointer(rebasing: pending[0..<count]), to: handle.fileDescriptor, url: url)
        } catch {
            heldBytes -= Int64(count)
            throw error
        }
    }

    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, url: URL) throws {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw URLError(.cannotWriteToFile, url: url, description: "Writing \(url.path) failed: \(reason).")
            }
            offset += written
        }
    }

    /// Drops everything held, to take the body again from byte 0.
    ///
    /// - Throws: ``ResumeError`` when the sink is a caller's stream.
    func truncate() throws {
        switch storage {
        case .memory:
            memory.removeAll()
        case .file(let handle, let url):
            pendingCount = 0
            do {
                try handle.truncate(atOffset: 0)
            } catch {
                throw URLError(.cannotWriteToFile, url: url, description: "Truncating \(url.path) failed: \(error).")
            }
        case .stream:
            throw ResumeError(.cannotRestartOutputStream)
        }
        heldBytes = 0
    }

    /// Closes the file or stream. Bytes still gathered for the file are written first; call
    /// ``flush()`` before to hear whether that worked.
    func close() {
        switch storage {
        case .memory: break
        case .file(let handle, _):
            try? flush()
            try? handle.close()
        case .stream(let stream): stream.close()
        }
    }

    deinit {
        pending?.deallocate()
    }
}
