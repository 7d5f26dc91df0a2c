import Foundation

/// A response body held in memory. Network thread only, like its ``ResponseBodySink``.
///
/// Small bodies grow in a `Data`. A body announced (or grown) to ``BodyBufferPool/minimumSize``
/// or more is written into a buffer from ``BodyBufferPool``, and ``take()`` hands that buffer
/// over as `Data` without copying it; it goes back to the pool when the caller's last copy
/// of the `Data` is gone. A body never taken gives its buffer back when this dies.
final class MemoryBody {
    private enum Storage {
        case small(Data)
        /// A pooled buffer whose first `count` bytes are the body.
        case pooled(UnsafeMutableRawBufferPointer, count: Int)
    }

    private var storage = Storage.small(Data())
    private let pool: BodyBufferPool

    init(pool: BodyBufferPool = .shared) {
        self.pool = pool
    }

    deinit {
        if case .pooled(let buffer, _) = storage {
            pool.recycle(buffer)
        }
    }

    /// The bytes held.
    var count: Int {
        switch storage {
        case .small(let data): data.count
        case .pooled(_, let count): count
        }
    }

    /// The bytes it holds before it takes a new buffer: a pooled buffer's size, or, for a small
    /// body, just under the size at which it moves to a pooled buffer.
    var capacity: Int {
        switch storage {
        case .small(let data): max(data.count, BodyBufferPool.minimumSize - 1)
        case .pooled(let buffer, _): buffer.count
        }
    }

    /// Makes room for `additional` more bytes, so that a body of announced length is written
    /// into one buffer without growing. Pages never written are never resident.
    func reserve(_ additional: Int) {
        ensureCapacity(count + additional)
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        ensureCapacity(count + bytes.count)
        switch storage {
        case .small(var data):
            storage = .small(Data())  // keep `data` uniquely referenced while it grows
            data.append(contentsOf: bytes)
            storage = .small(data)
        case .pooled(let buffer, let count):
            UnsafeMutableRawBufferPointer(rebasing: buffer[count..<(count + bytes.count)]).copyMemory(from: bytes)
            storage = .pooled(buffer, count: count + bytes.count)
        }
    }

    /// Drops the bytes held, keeping the memory.
    func removeAll() {
        switch storage {
        case .small: storage = .small(Data())
        case .pooled(let buffer, _): storage = .pooled(buffer, count: 0)
        }
    }

    /// Hands the body over; this is empty afterwards.
    func take() -> Data {
        defer { storage = .small(Data()) }
        switch storage {
        case .small(let data):
            return data
        case .pooled(let buffer, let count):
            guard count > 0 else {
                pool.recycle(buffer)
                return Data()
            }
            let pool = self.pool
            return Data(bytesNoCopy: buffer.baseAddress!, count: count, deallocator: .custom { _, _ in pool.recycle(buffer) })
        }
    }

    /// Moves to a pooled buffer large enough for `capacity` bytes once the body needs
    /// `BodyBufferPool.minimumSize` or more.
    private func ensureCapacity(_ capacity: Int) {
        switch storage {
        case .small(let data):
            guard capacity >= BodyBufferPool.minimumSize else { return }
            let buffer = pool.take(atLeast: capacity)
            data.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[0..<data.count]).copyMemory(from: $0) }
            storage = .pooled(buffer, count: data.count)
        case .pooled(let buffer, let count):
            guard capacity > buffer.count else { return }
            // Grow by at least doubling, so a body without a length is copied O(log n) times.
            let larger = pool.take(atLeast: max(capacity, buffer.count * 2))
            UnsafeMutableRawBufferPointer(rebasing: larger[0..<count]).copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            pool.recycle(buffer)
            storage = .pooled(larger, count: count)
        }
    }
}
