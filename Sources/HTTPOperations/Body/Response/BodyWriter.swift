import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Writes a response body to a file or a caller's stream on a serial queue, so the network
/// thread never waits for a disk or a slow consumer.
///
/// The network thread copies curl's chunks into a buffer of ``bufferSize`` bytes and hands
/// each full buffer to the queue. At most ``buffersAhead`` buffers wait there; when they are
/// all taken, ``admit(_:)`` says wait, the transfer pauses (curl keeps the chunk), and the
/// queue calls `roomAvailable` once a buffer is written, so memory stays bounded whatever the
/// body's size and however slow the writes.
///
/// A task iterating over the body (``Target/consumer``) is not made to wait for a full buffer:
/// when nothing handed over is still waiting for it, the bytes taken so far go at once, so a
/// small chunk (an event of a stream) reaches it as curl delivers it. When it lags, buffers
/// fill as for a file, and the first buffer it takes lets the network thread hand over what
/// waited meanwhile (`roomAvailable`), so no byte sits behind a quiet socket.
///
/// Writes happen in order. The first write that fails is kept as ``error``; every later
/// buffer is dropped unwritten, so no byte lands after a gap. Truncation (a resume answered
/// with the whole resource) and closing are jobs on the same queue, after the writes handed
/// in before them.
///
/// Thread-safety: the buffer being filled is the network thread's alone, a ``ThreadConfined``
/// value (checked in debug builds). What both sides touch — the count of buffers ahead,
/// whether room is wanted, the first error — lives in one struct behind one `Mutex`. The
/// target is used only by the queue once writing starts.
final class BodyWriter: Sendable {
    /// Where the bytes go.
    enum Target {
        /// A file, written at its descriptor's offset; the writer closes it.
        case file(FileHandle, URL)
        /// A caller's stream, opened and closed by the writer.
        case stream(OutputStream)
        /// A task iterating over the body; a buffer counts as ahead until it takes it.
        case consumer(ResponseBodyChannel)
    }

    /// Bytes per hand-over: 400 write(2) calls for 100 MiB.
    static let bufferSize = 256 << 10
    /// Buffers handed to the queue and not yet written before the transfer waits. Deep enough
    /// that a write the kernel slows now and then does not stop the receiving (a shallower
    /// queue pauses the transfer again and again: Docs/Performance.md, "What limits each
    /// figure"). With the buffer being filled, at most 1.75 MiB per download.
    static let buffersAhead = 6

    private struct Shared {
        var ahead = 0
        /// The network thread was refused room and waits to hear of it.
        var roomWanted = false
        var error: URLError?
        /// Bytes the target really took since it was last emptied (for a file: its size).
        var written: Int64 = 0
        /// Emptyings that happened (see ``discardAndEmpty()``).
        var emptied = 0
        /// A consumer's bytes wait in the buffer being filled because it had not taken the
        /// ones before: the network thread is to hear when it has.
        var partialWaiting = false
    }

    /// What the target holds at a point in the queue's order (see ``afterWrites(_:)``).
    struct Written: Sendable {
        /// Bytes the target really took (for a file: its size).
        var bytes: Int64
        /// Every emptying asked for before this point happened: the bytes are of the version
        /// the network thread took last. False when one was skipped or failed (the target
        /// still holds an earlier version's bytes, and nothing more is written).
        var holdsCurrentVersion: Bool
    }

    private let shared = Mutex(Shared())
    private let queue: DispatchQueue
    private let target: Handover<Target>
    private let roomAvailable: @Sendable () -> Void
    private let failed: @Sendable (URLError) -> Void
    private let pool: BodyBufferPool

    /// What the network thread alone touches.
    private struct Filling {
        /// The buffer being filled, and the bytes in it.
        var buffer: UnsafeMutableRawBufferPointer?
        var count = 0
        /// Emptyings asked for.
        var emptiesRequested = 0
    }

    /// The network thread's fields.
    private let filling: ThreadConfined<Filling>
    /// The target is a consumer, which is handed bytes as soon as it is idle.
    private let handsOverWhenIdle: Bool

    /// - Parameters:
    ///   - target: The file or stream; a stream is opened on `queue`.
    ///   - queue: A serial queue; other jobs on it (resume data beside the file) run after the
    ///     writes handed in before them.
    ///   - emptyFirst: Empty the file before the first write.
    ///   - alreadyWritten: What the file holds already (a continued download), kept.
    ///   - roomAvailable: Called on `queue` when a buffer was written after ``admit(_:)``
    ///     said wait.
    ///   - failed: Called on `queue`, once, when a write, emptying or close fails: the
    ///     writer's failure is an event, not something found at the next buffer.
    init(target: Target, queue: DispatchQueue, emptyFirst: Bool = false, alreadyWritten: Int64 = 0,
         pool: BodyBufferPool = .shared, roomAvailable: @escaping @Sendable () -> Void,
         failed: @escaping @Sendable (URLError) -> Void = { _ in }) {
        self.target = Handover(target)
        self.queue = queue
        self.pool = pool
        self.roomAvailable = roomAvailable
        self.failed = failed
        if case .consumer = target { handsOverWhenIdle = true } else { handsOverWhenIdle = false }
        // Counted like any emptying: when it fails, the file still holds the old bytes, and
        // `afterWrites` must not call them the current version (resume data would name the
        // new version beside them).
        filling = ThreadConfined(Filling(emptiesRequested: emptyFirst ? 1 : 0))
        shared.withLock { $0.written = emptyFirst ? 0 : alreadyWritten }
        queue.async { [self] in
            switch self.target.value {
            case .stream(let stream): stream.open()
            case .file where emptyFirst: self.emptyAndCount()
            case .file, .consumer: break
            }
        }
    }

    deinit {
        if let buffer = filling.unsafeValueInDeinit.buffer { pool.recycle(buffer) }
    }

    /// The first write, truncation or close that failed.
    var error: URLError? { shared.withLock { $0.error } }

    /// Whether `count` more bytes can be taken now.
    enum Admission {
        case accepted
        /// Not now: `roomAvailable` is called once there is room.
        case wait
        /// A write failed; nothing more will be written.
        case failed(URLError)
    }

    /// Whether `count` more bytes can be taken now. Takes the lock only when they would start
    /// a new buffer, so a failed write is noticed within a buffer's worth of chunks.
    func admit(_ count: Int) -> Admission {
        if filling.withValue({ $0.buffer != nil && $0.count + count <= Self.bufferSize }) { return .accepted }
        return shared.withLock { shared in
            if let error = shared.error { return .failed(error) }
            // A buffer is handed over before the next is filled, so one more must fit ahead.
            guard shared.ahead < Self.buffersAhead else {
                shared.roomWanted = true
                return .wait
            }
            return .accepted
        }
    }

    /// Takes `bytes`, whatever ``admit(_:)`` says (bodies held aside arrive whole).
    func append(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let full = filling.withValue { filling -> Bool in
                let buffer = filling.buffer ?? pool.take(atLeast: Self.bufferSize)
                filling.buffer = buffer
                let count = min(bytes.count - offset, buffer.count - filling.count)
                UnsafeMutableRawBufferPointer(rebasing: buffer[filling.count..<(filling.count + count)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
                filling.count += count
                offset += count
                return filling.count == buffer.count
            }
            if full { handOver() }
        }
        if handsOverWhenIdle { handOverIfIdle() }
    }

    /// Hands a consumer the bytes taken so far when it has taken everything before them;
    /// otherwise notes that they wait, and `roomAvailable` comes once it has. Network thread.
    func handOverIfIdle() {
        guard filling.withValue({ $0.count > 0 }), handsOverWhenIdle else { return }
        let idle = shared.withLock { shared -> Bool in
            guard shared.ahead == 0 else {
                shared.partialWaiting = true
                return false
            }
            return true
        }
        if idle { handOver() }
    }

    /// Hands the bytes taken so far to the queue.
    func handOver() {
        let taken = filling.withValue { filling -> (buffer: UnsafeMutableRawBufferPointer, count: Int)? in
            guard let buffer = filling.buffer, filling.count > 0 else { return nil }
            defer { filling = Filling(emptiesRequested: filling.emptiesRequested) }
            return (buffer, filling.count)
        }
        guard let taken else { return }
        // Owned by whichever side holds it: the network thread lets go of it here.
        let filled = Handover(taken)
        shared.withLock { $0.ahead += 1 }
        queue.async { [self] in
            if case .consumer(let channel) = self.target.value {
                // Ahead until the consumer takes it: that is the backpressure.
                let chunk = Data(UnsafeRawBufferPointer(rebasing: filled.value.buffer[0..<filled.value.count]))
                self.pool.recycle(filled.value.buffer)
                channel.push(chunk) { self.release() }
                return
            }
            if self.error == nil {
                self.keep(self.write(UnsafeRawBufferPointer(rebasing: filled.value.buffer[0..<filled.value.count])))
            }
            self.pool.recycle(filled.value.buffer)
            self.release()
        }
    }

    /// A buffer handed over is done with: room for another, and the network thread hears of
    /// it if it waits.
    private func release() {
        let notify = shared.withLock { shared -> Bool in
            shared.ahead -= 1
            // A consumer that took the last chunk ahead: the bytes that waited can go.
            let partialCanGo = shared.partialWaiting && shared.ahead == 0
            if partialCanGo { shared.partialWaiting = false }
            defer { shared.roomWanted = false }
            return shared.roomWanted || partialCanGo
        }
        if notify { roomAvailable() }
    }

    /// Drops the bytes not yet handed over and empties the file after the writes before.
    /// After a failure nothing is emptied (nor written): ``afterWrites(_:)`` then reports that
    /// the file does not hold the current version.
    func discardAndEmpty() {
        filling.withValue { filling in
            filling.count = 0
            filling.emptiesRequested += 1
        }
        queue.async { [self] in self.emptyAndCount() }
    }

    /// Runs `job` on the queue after every write and emptying handed in before it (call
    /// ``handOver()`` first for the bytes being filled), with what the target holds then.
    func afterWrites(_ job: @escaping @Sendable (Written) -> Void) {
        let requested = filling.withValue { $0.emptiesRequested }
        queue.async { [self] in
            let (bytes, emptied) = self.shared.withLock { ($0.written, $0.emptied) }
            job(Written(bytes: bytes, holdsCurrentVersion: emptied == requested))
        }
    }

    /// Hands over what is left, closes the target after the last write, and calls `completion`
    /// on the queue with the first error, if any.
    func close(then completion: @escaping @Sendable (URLError?) -> Void) {
        handOver()
        queue.async { [self] in
            switch self.target.value {
            case .file(let handle, _): try? handle.close()
            case .stream(let stream): stream.close()
            // Ended by the operation's outcome, after this.
            case .consumer: break
            }
            completion(self.error)
        }
    }

    // MARK: - On the queue

    /// Keeps `failure` as the writer's error unless an earlier one is kept, and reports the
    /// first.
    private func keep(_ failure: URLError?) {
        guard let failure else { return }
        let first = shared.withLock { shared -> Bool in
            guard shared.error == nil else { return false }
            shared.error = failure
            return true
        }
        if first { failed(failure) }
    }

    /// Writes all of `bytes`; the error, if any.
    private func write(_ bytes: UnsafeRawBufferPointer) -> URLError? {
        switch target.value {
        case .file(let handle, let url):
            var offset = 0
            // Counted whatever happens: a write that fails midway leaves a true prefix.
            defer { shared.withLock { $0.written += Int64(offset) } }
            while offset < bytes.count {
                let written = Glibc.write(handle.fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    let reason = String(cString: strerror(errno))
                    return URLError(.cannotWriteToFile, url: url, description: "Writing \(url.path) failed: \(reason).")
                }
                offset += written
            }
        case .stream(let stream):
            var offset = 0
            while offset < bytes.count {
                let written = stream.write(bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self),
                                           maxLength: bytes.count - offset)
                guard written > 0 else {
                    // Asked only in the error state: corelibs traps reading `streamError` of a
                    // stream that has none (seen with an OutputStream subclass).
                    let error = stream.streamStatus == .error ? stream.streamError : nil
                    let reason = error.map { "\($0)" } ?? "the stream accepted no bytes"
                    return URLError(.cannotWriteToFile, url: nil, description: "Writing the response body failed: \(reason).")
                }
                offset += written
            }
        case .consumer:
            // Pushed by handOver(), never written.
            break
        }
        return nil
    }

    /// Empties the file, unless a write or emptying failed before, and counts the emptying
    /// when it happened (``Written/holdsCurrentVersion`` compares the count with those asked
    /// for).
    private func emptyAndCount() {
        guard error == nil else { return }
        if let failure = empty() {
            keep(failure)
        } else {
            shared.withLock { shared in
                shared.emptied += 1
                shared.written = 0
            }
        }
    }

    /// Empties the file and writes from its start again; the error, if any.
    private func empty() -> URLError? {
        guard case .file(let handle, let url) = target.value else { return nil }
        guard ftruncate(handle.fileDescriptor, 0) == 0, lseek(handle.fileDescriptor, 0, SEEK_SET) == 0 else {
            let reason = String(cString: strerror(errno))
            return URLError(.cannotWriteToFile, url: url, description: "Emptying \(url.path) failed: \(reason).")
        }
        return nil
    }
}
