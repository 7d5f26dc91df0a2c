import Crypto
import Foundation

/// Where a resumable upload's bytes come from.
///
/// - ``file(_:)``: read in chunks at the offsets the server asks for, so memory stays flat
///   whatever the size; the file's identity (size, modification time, SHA-256 of its content)
///   is taken when the upload begins, and its size, modification time, status-change time and
///   inode are checked around every chunk read (a write restores no status-change time); when
///   they moved, the content is hashed again: the same content goes on (a `chmod`, a `touch`),
///   another is a ``UploadError/Reason/fileChanged(path:)``, never a spliced upload.
///   Only a file upload has resume data (it can be read again after a restart).
/// - ``data(_:)``: bytes in memory.
/// - ``stream(length:_:)``: an async sequence of chunks, read once; only the bytes the server
///   has not acknowledged are kept, so a drop resumes from the server's offset as long as it is
///   not below them. A cancel ends a wait for the next chunk. A stream sent whole in one
///   creation (the IETF draft, to a server not known to resume) cannot go back: a drop, a
///   redirect or an authentication round ends that upload with
///   ``UploadError/Reason/sourceCannotRewind(offset:)``.
public struct UploadSource: Sendable {
    enum Kind: Sendable {
        case file(URL)
        case data(Data)
        case stream(length: Int64, AsyncThrowingStream<Data, any Error>)
    }

    let kind: Kind

    /// The file at `url`.
    public static func file(_ url: URL) -> UploadSource { UploadSource(kind: .file(url)) }
    /// `data`, from memory.
    public static func data(_ data: Data) -> UploadSource { UploadSource(kind: .data(data)) }
    /// Exactly `length` bytes from `chunks`, in order (the protocols declare the length when the
    /// upload is created). A stream that ends early, or whose chunk reaches past `length`, fails
    /// the upload; once `length` bytes were read, the stream is not read further.
    public static func stream(length: Int64, _ chunks: AsyncThrowingStream<Data, any Error>) -> UploadSource {
        UploadSource(kind: .stream(length: length, chunks))
    }

    /// The file's URL, for a file source.
    var fileURL: URL? {
        if case .file(let url) = kind { return url }
        return nil
    }
}

/// A file's identity as an upload remembers it: what must still hold for its bytes to be sent.
struct UploadFileIdentity: Sendable, Hashable, Codable {
    /// The size in bytes.
    var size: Int64
    /// The modification time, in nanoseconds since 1970.
    var modificationNanoseconds: Int64
    /// The SHA-256 of the whole content, lowercase hex.
    var sha256: String

    /// Reads `url` whole (in 1 MiB pieces) to take its identity, and the stamp every chunk read
    /// is checked against; `stopped` is asked between pieces (a cancel need not wait for the
    /// whole file).
    static func measure(_ url: URL, stoppingWhen stopped: () -> Bool = { false }) throws -> (UploadFileIdentity, FileStamp) {
        let before = try FileStamp(url)
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        while let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty {
            if stopped() { throw CancellationError() }
            hasher.update(data: piece)
        }
        // A file written while it was hashed has no identity to promise.
        guard try FileStamp(url) == before else { throw UploadError(reason: .fileChanged(path: url.path)) }
        let digest = hasher.finalize().lowercaseHex
        return (UploadFileIdentity(size: before.size, modificationNanoseconds: before.modified, sha256: digest), before)
    }

}

/// What `stat` says of a file that changes when its content does: size, modification time,
/// status-change time (which no call can set back, unlike the modification time) and inode
/// (a file replaced by another of the same name). Checked around every chunk read.
struct FileStamp: Equatable, Sendable {
    let size: Int64
    let modified: Int64
    let statusChanged: Int64
    let inode: UInt64

    init(_ url: URL) throws {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: url.path])
        }
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        statusChanged = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        inode = UInt64(info.st_ino)
    }
}

/// Reads a source's bytes for the upload's task (never on the network thread).
actor UploadReader {
    private let source: UploadSource
    /// The file's identity, for a file source.
    private let identity: UploadFileIdentity?
    /// The file's stamp when its identity was taken: every chunk read is checked against it.
    private var stamp: FileStamp?
    /// A stream's bytes from `windowStart` on: read, not yet acknowledged.
    private var window = Data()
    private var windowStart: Int64 = 0
    private var iterator: AsyncThrowingStream<Data, any Error>.AsyncIterator?

    init(source: UploadSource, identity: UploadFileIdentity?, stamp: FileStamp?) {
        self.source = source
        self.identity = identity
        self.stamp = stamp
    }


    /// `count` bytes from `offset`.
    func bytes(from offset: Int64, count: Int) async throws -> Data {
        guard count > 0 else { return Data() }
        switch source.kind {
        case .data(let data):
            let start = data.startIndex + Int(offset)
            return data.subdata(in: start..<start + count)
        case .file(let url):
            return try readFile(url, from: offset, count: count)
        case .stream(let length, let chunks):
            return try await readStream(chunks, length: length, from: offset, count: count)
        }
    }

    private func readFile(_ url: URL, from offset: Int64, count: Int) throws -> Data {
        // Read between two stamp checks; a stamp that moved (a chmod, a touch, a write) gets the
        // content hashed again: the same content goes on (read once more), another is refused.
        for _ in 0..<2 {
            try confirmContent(of: url)
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(offset))
            let bytes = try handle.read(upToCount: count) ?? Data()
            if bytes.count == count, (try? FileStamp(url)) == stamp { return bytes }
        }
        throw UploadError(reason: .fileChanged(path: url.path))
    }

    /// Checks that the file is still the one measured: its stamp, or else its content.
    private func confirmContent(of url: URL) throws {
        guard let identity, let stamp else { throw UploadError(reason: .fileChanged(path: url.path)) }
        if (try? FileStamp(url)) == stamp { return }
        let (now, newStamp) = try UploadFileIdentity.measure(url)
        guard now.size == identity.size, now.sha256 == identity.sha256 else { throw UploadError(reason: .fileChanged(path: url.path)) }
        self.stamp = newStamp
    }

    private func readStream(_ chunks: AsyncThrowingStream<Data, any Error>, length: Int64,
                            from offset: Int64, count: Int) async throws -> Data {
        // Bytes before `offset` were acknowledged: let them go. Bytes before the window are gone.
        guard offset >= windowStart else { throw UploadError(reason: .sourceCannotRewind(offset: offset)) }
        let drop = Int(min(offset - windowStart, Int64(window.count)))
        window.removeFirst(drop)
        windowStart += Int64(drop)
        guard offset == windowStart else { throw UploadError(reason: .sourceCannotRewind(offset: offset)) }
        var chunkIterator = iterator ?? chunks.makeAsyncIterator()
        defer { iterator = chunkIterator }
        while window.count < count {
            guard let chunk = try await chunkIterator.next(isolation: self) else {
                throw UploadError(reason: .sourceLengthMismatch(declared: length))
            }
            window.append(chunk)
            if windowStart + Int64(window.count) > length {
                throw UploadError(reason: .sourceLengthMismatch(declared: length))
            }
        }
        return Data(window.prefix(count))
    }
}
