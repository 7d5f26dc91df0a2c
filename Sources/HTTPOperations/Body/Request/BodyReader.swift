import Foundation
import Synchronization

/// Reads a request body stream on a serial queue, so the network thread never runs a caller's
/// `InputStream` (user code) or waits for a disk (a multipart file part is a `read(2)`).
///
/// The queue reads up to ``buffersAhead`` chunks of ``chunkSize`` bytes ahead. curl's read
/// callback, on the network thread, only copies from chunks that are ready; when none is, it
/// answers `CURL_READFUNC_PAUSE`, and the queue calls `dataAvailable` once there is a chunk
/// (or the end, or a failure), so the transfer can be unpaused. A stream that blocks holds up
/// only its own transfer. Memory per upload stays under (``buffersAhead`` + 1) chunks.
///
/// Rewinding (curl sends a body again for an authentication round; a 307 or 308 sends it to
/// the next URL) drops what was read ahead and rewinds a ``RewindableBodyStream`` on the
/// queue, before the next read. A plain stream cannot rewind: the read fails with
/// `URLError(.requestBodyStreamExhausted)`.
///
/// One queue serves every transfer of an operation (see ``TransferRequest/bodyQueue``), so a
/// new transfer's reads come after an old one's, on the same stream.
///
/// A ``StreamedRequestBody`` is not read but written: its closure runs in a task, and each
/// ``RequestBodyWriter/write(_:)`` puts a chunk among the ready ones, or suspends while
/// ``bytesAhead`` bytes are already waiting (see `BodyReader+Writer.swift`). Sending it
/// again runs the closure again, in a new task, as a new generation.
///
/// Thread-safety: the chunk being copied is the network thread's alone, a ``ThreadConfined``
/// value (checked in debug builds). The ready chunks, the end and the failure, whether the
/// network thread waits for data, and a written body's task and waiting writer live in one
/// struct behind one `Mutex`. The stream is used only on the queue.
final class BodyReader: Sendable {
    /// Bytes per read from the stream.
    static let chunkSize = 64 << 10
    /// Chunks read ahead of curl.
    static let buffersAhead = 4
    /// Bytes a written body may have waiting for curl before its writer waits.
    static let bytesAhead = chunkSize * buffersAhead

    /// What a read from curl gets.
    enum ReadResult: Equatable {
        /// This many bytes were copied.
        case bytes(Int)
        /// The body is complete.
        case end
        /// Nothing is ready yet: pause, `dataAvailable` follows.
        case wait
        /// The stream failed, or could not rewind.
        case failed
    }

    struct Shared {
        var ready: [Data] = []
        var atEnd = false
        var failure: URLError?
        /// The network thread was told to wait and must hear when there is data.
        var waiting = false
        /// A fill job is queued or running.
        var filling = false
        /// Bumped by every rewind and by `stop()`: a fill of an older generation keeps nothing.
        var generation = 0
        /// The trailer fields, asked for when the stream ended.
        var trailerFields: [(name: String, value: String)] = []
        /// A written body: the bytes of `ready`, which its writer may not let grow past
        /// ``BodyReader/bytesAhead``.
        var readyBytes = 0
        /// A written body: the bytes its writer wrote in this generation.
        var writtenBytes: Int64 = 0
        /// A written body: the writer waiting for room, resumed when curl took enough for its
        /// write of ``writerNeeds`` bytes to fit.
        var writerWaiting: CheckedContinuation<Void, any Error>?
        var writerNeeds = 0
        /// A written body: the task running its closure, cancelled when the send ends.
        var writerTask: Task<Void, Never>?
    }

    let shared = Mutex(Shared())
    private let stream: Handover<InputStream>
    /// The body when it is written, not read: its closure produces the chunks.
    let written: WrittenBody?
    private let queue: DispatchQueue
    let dataAvailable: @Sendable () -> Void
    /// Asked for the trailer fields once the stream ended, on the queue (it is caller's code).
    let trailers: RequestTrailersBlock?
    /// The chunk being copied into curl's buffers, and how far: the network thread's.
    private struct Copying {
        var chunk = Data()
        var offset = 0
    }

    private let copying = ThreadConfined(Copying())

    /// - Parameters:
    ///   - stream: The body; opened on `queue` if not open.
    ///   - queue: A serial queue, shared by the transfers of one operation.
    ///   - rewindFirst: The stream was sent before (a redirect): rewind it before reading.
    ///   - dataAvailable: Called when data, the end or a failure arrives after a read
    ///     answered ``ReadResult/wait``: on `queue`, or in a written body's task.
    ///   - trailers: Asked for the trailer fields once the stream ended, on `queue`.
    init(stream: InputStream, queue: DispatchQueue, rewindFirst: Bool, trailers: RequestTrailersBlock? = nil,
         dataAvailable: @escaping @Sendable () -> Void) {
        self.stream = Handover(stream)
        self.written = (stream as? StreamedRequestBody).map(WrittenBody.init)
        self.queue = queue
        self.trailers = trailers
        self.dataAvailable = dataAvailable
        if let written {
            guard !rewindFirst || written.isRestartable else {
                shared.withLock { $0.failure = Self.cannotResend }
                return
            }
            startWriting(written, generation: 0)
            return
        }
        let generation = shared.withLock { shared in
            shared.filling = true
            return shared.generation
        }
        queue.async { [self] in
            let stream = self.stream.value
            if rewindFirst, !self.rewindStream() { return }
            if stream.streamStatus == .notOpen { stream.open() }
            self.fill(generation: generation)
        }
    }

    // MARK: - Network thread

    /// Copies what is ready into `buffer`: from as many ready chunks as fit, so many small
    /// writes go out as one piece rather than one curl chunk each.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        copying.withValue { copying in read(into: buffer, from: &copying) }
    }

    private func read(into buffer: UnsafeMutableRawBufferPointer, from current: inout Copying) -> ReadResult {
        var copied = 0
        while copied < buffer.count {
            if current.offset == current.chunk.count {
                var roomForWriter: CheckedContinuation<Void, any Error>?
                let next = shared.withLock { shared -> ReadResult? in
                    if !shared.ready.isEmpty {
                        current = Copying(chunk: shared.ready.removeFirst())
                        shared.readyBytes -= current.chunk.count
                        if shared.writerWaiting != nil, Self.writeFits(shared.writerNeeds, shared) {
                            swap(&roomForWriter, &shared.writerWaiting)
                        }
                        scheduleFill(&shared)
                        return nil
                    }
                    // Bytes already copied go first; the end, a failure or a wait is for the next call.
                    if copied > 0 { return .bytes(copied) }
                    if shared.atEnd { return .end }
                    if let _ = shared.failure { return .failed }
                    shared.waiting = true
                    scheduleFill(&shared)
                    return .wait
                }
                roomForWriter?.resume()
                if let next { return next }
            }
            let count = min(buffer.count - copied, current.chunk.count - current.offset)
            current.chunk.withUnsafeBytes { source in
                (buffer.baseAddress! + copied).copyMemory(from: source.baseAddress! + current.offset, byteCount: count)
            }
            current.offset += count
            copied += count
        }
        return .bytes(copied)
    }

    /// The failure that ended the body, if any.
    var failure: URLError? { shared.withLock { $0.failure } }

    /// The trailer fields asked for when the stream ended (none before). Network thread.
    var trailerFields: [(name: String, value: String)] { shared.withLock { $0.trailerFields } }

    /// Starts again from the first byte (curl's seek to 0). Returns false for a stream that
    /// cannot rewind.
    func rewind() -> Bool {
        // Checked first, as every entry: a stream that cannot rewind is still this thread's.
        let rewound = copying.withValue { copying -> Bool in
            guard stream.value.canBeSentAgain else { return false }
            copying = Copying()
            return true
        }
        guard rewound else { return false }
        let (generation, ended) = shared.withLock { shared -> (Int, EndedWriter) in
            let ended = Self.endSend(&shared)
            shared.atEnd = false
            shared.failure = nil
            shared.trailerFields = []
            shared.filling = written == nil
            return (shared.generation, ended)
        }
        ended.cancel()
        if let written {
            startWriting(written, generation: generation)
            return true
        }
        queue.async { [self] in
            guard self.rewindStream() else { return }
            self.fill(generation: generation)
        }
        return true
    }

    /// Stops reading ahead: the transfer is over. Closes a stream that cannot be sent again.
    func stop() {
        shared.withLock { Self.endSend(&$0) }.cancel()
        if written != nil { return }
        queue.async { [stream] in
            // A rewindable stream may be sent again by the next transfer (a 307/308 redirect):
            // it is not this transfer's to close; it closes its own resources at its end.
            if !(stream.value is RewindableBodyStream) { stream.value.close() }
        }
    }

    /// Queues a fill when there is room ahead and none is queued. Under the lock.
    private func scheduleFill(_ shared: inout Shared) {
        guard written == nil, !shared.filling, !shared.atEnd, shared.failure == nil, shared.ready.count < Self.buffersAhead else { return }
        shared.filling = true
        let generation = shared.generation
        queue.async { [self] in self.fill(generation: generation) }
    }

    // MARK: - On the queue

    /// Reads chunks until enough are ahead, the end, a failure, or a newer generation.
    private func fill(generation: Int) {
        let stream = self.stream.value
        while true {
            let room = shared.withLock { shared -> Bool in
                guard shared.generation == generation else { return false }
                guard shared.ready.count < Self.buffersAhead, !shared.atEnd, shared.failure == nil else {
                    shared.filling = false
                    return false
                }
                return true
            }
            guard room else { return }
            var chunk = Data(count: Self.chunkSize)
            let count = chunk.withUnsafeMutableBytes { buffer in
                stream.read(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: buffer.count)
            }
            var failure: URLError? = count < 0
                ? URLError(.requestBodyStreamExhausted, url: nil,
                           description: "Reading the request body failed: \(Self.reason(stream))")
                : nil
            if count > 0 { chunk.count = count }
            // Asked here, before curl can hear of the end: the caller's block, off the network
            // thread. A field that would split the request ends it instead (nothing more sent).
            let fields = count == 0 ? trailers?() ?? [] : []
            if let invalid = Self.invalidTrailer(in: fields) { failure = invalid }
            let notify = shared.withLock { shared -> Bool in
                guard shared.generation == generation else { return false }
                if let failure {
                    shared.failure = failure
                } else if count == 0 {
                    shared.trailerFields = fields
                    shared.atEnd = true
                } else {
                    shared.ready.append(chunk)
                }
                defer { shared.waiting = false }
                return shared.waiting
            }
            if notify { dataAvailable() }
        }
    }

    /// The failure for trailer fields one of which would split the request, if one would.
    static func invalidTrailer(in fields: [(name: String, value: String)]) -> URLError? {
        guard let invalid = fields.first(where: { !HTTPFieldValidation.isToken($0.name) || !HTTPFieldValidation.isFieldValue($0.value) })
        else { return nil }
        return URLError(.requestBodyStreamExhausted, url: nil,
                        description: "The request trailer field \"\(invalid.name)\" is not a valid field: nothing more was sent.")
    }

    /// The failure of a body whose trailer fields libcurl did not send (over HTTP/2).
    static var trailersNotSent: URLError {
        URLError(.requestBodyStreamExhausted, url: nil,
                 description: "The request trailer fields were not sent: libcurl sends them only after a chunked HTTP/1.1 body, and this request went over HTTP/2.")
    }

    /// The failure of a body that cannot be sent a second time.
    static var cannotResend: URLError {
        URLError(.requestBodyStreamExhausted, url: nil, description: "The request body stream cannot be sent again.")
    }

    /// Rewinds the stream; on failure records it (and tells a waiting transfer).
    private func rewindStream() -> Bool {
        if (stream.value as? RewindableBodyStream)?.rewind() == true { return true }
        let notify = shared.withLock { shared -> Bool in
            shared.failure = Self.cannotResend
            shared.filling = false
            defer { shared.waiting = false }
            return shared.waiting
        }
        if notify { dataAvailable() }
        return false
    }

    /// Why `stream` failed, asked only in the error state (corelibs traps reading
    /// `streamError` of a stream that has none).
    private static func reason(_ stream: InputStream) -> String {
        guard stream.streamStatus == .error, let error = stream.streamError else { return "the stream returned an error" }
        return "\(error)"
    }
}
