import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where one operation's response body goes. Network thread only.
///
/// It does not count what it holds after it opened: ``TransferStateMachine/held`` is the one
/// count of the bytes taken (each `write` is one the machine admitted), and the
/// ``BodyWriter`` knows what the file really holds (``BodyWriter/Written``).
///
/// Three kinds: memory (the default), a destination file the operation owns, and an output
/// stream the caller owns. Files and streams are written by a ``BodyWriter`` off the network
/// thread; memory is appended to in place. Memory and files can be truncated when a server
/// answers a resume with the whole resource again; a caller's stream cannot, so such a resume
/// fails instead of splicing.
final class ResponseBodySink {
    private enum Storage {
        case memory
        case file(BodyWriter, URL)
        case stream(BodyWriter)
    }

    private var storage: Storage
    /// The body, when it goes to memory.
    private let memory = MemoryBody()
    /// What the destination file held when it was opened and is continued (a resume), for
    /// the machine's ``TransferStateMachine/begin(held:)``: what is really on disk, whatever a
    /// saved offset says. 0 for memory, a stream or a file that is emptied.
    let heldAtOpen: Int64

    /// A sink for memory.
    init() {
        heldAtOpen = 0
        storage = .memory
    }

    /// A sink for a destination file, or else a stream (a caller's `OutputStream` or a
    /// ``ResponseBodyChannel``): one of the two is given. Memory has `init()`, which makes no
    /// writer and so asks for none of its callbacks.
    ///
    /// - Parameters:
    ///   - destination: A file to write; created if missing.
    ///   - continuing: Keep what the file holds and append (a resume); else empty it.
    ///   - writerQueue: The serial queue that writes a file or stream; asked for only then.
    ///   - roomAvailable: Called on the writer queue when a write made room after
    ///     ``admit(_:)`` said wait.
    ///   - failed: Called on the writer queue, once, when writing the file or stream failed.
    /// - Throws: `URLError(.cannotCreateFile)` or `.cannotOpenFile` when the file cannot be opened.
    init(destination: URL?, stream: BodyWriter.Target?, continuing: Bool, followsSymbolicLinks: Bool = false,
         writerQueue: () -> DispatchQueue, roomAvailable: @escaping @Sendable () -> Void,
         failed: @escaping @Sendable (URLError) -> Void = { _ in }) throws {
        if let destination {
            let handle = try Self.openFile(destination, followsSymbolicLinks: followsSymbolicLinks)
            let size = Int64((try? handle.seekToEnd()) ?? 0)
            // What is really on disk is what we hold, whatever a saved offset says. Only a file
            // that holds bytes is emptied: ext4 treats a truncation to zero as "replace via
            // truncate" and flushes the whole new file from close(2), a long stall.
            heldAtOpen = continuing ? size : 0
            let writer = BodyWriter(target: .file(handle, destination), queue: writerQueue(),
                                    emptyFirst: !continuing && size > 0, alreadyWritten: heldAtOpen,
                                    roomAvailable: roomAvailable, failed: failed)
            storage = .file(writer, destination)
        } else if let stream {
            heldAtOpen = 0
            storage = .stream(BodyWriter(target: stream, queue: writerQueue(), roomAvailable: roomAvailable, failed: failed))
        } else {
            preconditionFailure("a sink for memory is made with init()")
        }
    }

    /// Opens `url` for reading and writing, creating it (mode 0644 less the umask) if missing;
    /// a symbolic link is refused unless `followsSymbolicLinks`.
    ///
    /// One open(2) with O_CREAT: `FileManager.createFile` writes a temporary file and renames
    /// it over the path, two more system calls and a directory update per download.
    ///
    /// - Throws: ``SecurityError`` `.destinationIsSymbolicLink`, or `URLError(.cannotCreateFile)`
    ///   / `.cannotOpenFile`.
    private static func openFile(_ url: URL, followsSymbolicLinks: Bool) throws -> FileHandle {
        let flags = O_RDWR | O_CREAT | O_CLOEXEC | (followsSymbolicLinks ? 0 : O_NOFOLLOW)
        let descriptor = url.withUnsafeFileSystemRepresentation { path -> Int32 in
            guard let path else { return -1 }
            return Glibc.open(path, flags, 0o644)
        }
        if descriptor < 0, errno == ELOOP, !followsSymbolicLinks {
            throw SecurityError(.destinationIsSymbolicLink(url.path), url: url)
        }
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            let code: URLError.Code = errno == ENOENT || errno == EACCES || errno == EROFS ? .cannotCreateFile : .cannotOpenFile
            throw URLError(code, url: url, description: "Cannot open \(url.path) for writing: \(reason).")
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    private var writer: BodyWriter? {
        switch storage {
        case .memory: nil
        case .file(let writer, _), .stream(let writer): writer
        }
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

    /// Whether `count` more bytes can be taken now without the writer falling further behind
    /// (when it waits, the sink's `roomAvailable` is called once there is room), or a write
    /// to the file or stream failed. Memory always takes them.
    func admit(_ count: Int) -> BodyWriter.Admission {
        writer?.admit(count) ?? .accepted
    }

    /// Hands a consumer the bytes that waited while it was busy, if it is idle now.
    func handOverIfIdle() {
        writer?.handOverIfIdle()
    }

    /// Reserves room in memory for a body of `length` bytes, at most `limit`: the server's
    /// word is trusted only as far as the caller's ``URLConnectionOperation/maximumBodySize``
    /// (an announced length beyond it is refused before this). Reserved pages that are never
    /// written are address space, not resident memory. Growing by doubling instead would copy
    /// a large body again at each step (Docs/Performance.md, "Fixed so far").
    func reserve(_ length: Int64, limit: Int64) {
        if case .memory = storage, length > 0 {
            memory.reserve(Int(min(length, limit)))
        }
    }

    /// Hands over the body held in memory; the sink holds none afterwards.
    func takeMemory() -> Data {
        memory.take()
    }

    /// Appends `bytes`. A file's or stream's write fails later, as ``admit(_:)`` reports.
    func write(_ bytes: UnsafeRawBufferPointer) {
        if let writer {
            writer.append(bytes)
        } else {
            memory.append(bytes)
        }
    }

    /// The first write to the file or stream that failed, if any.
    var writeError: URLError? {
        writer?.error
    }

    /// Runs `job` on the writer queue after every byte taken so far is written (or failed)
    /// and every emptying asked for has happened (or not): with what the file really holds.
    /// Only for a file or stream.
    func afterWrites(_ job: @escaping @Sendable (BodyWriter.Written) -> Void) {
        guard let writer else { return }
        writer.handOver()
        writer.afterWrites(job)
    }

    /// Drops everything held, to take the body again from byte 0.
    ///
    /// - Throws: ``ResumeError`` when the sink is a caller's stream.
    func truncate() throws {
        switch storage {
        case .memory:
            memory.removeAll()
        case .file(let writer, _):
            writer.discardAndEmpty()
        case .stream:
            throw ResumeError(.cannotRestartOutputStream)
        }
    }

    /// Writes what is left and closes the file or stream, then calls `completion` with the
    /// first write error: at once for memory, on the writer queue otherwise.
    func close(then completion: @escaping @Sendable (URLError?) -> Void) {
        guard let writer else { return completion(nil) }
        writer.close(then: completion)
    }
}
