import Foundation
import Synchronization

/// Reusable memory for large response bodies.
///
/// A body of a megabyte, allocated and freed per response, is mapped fresh by the allocator
/// each time, and the kernel then zeroes and maps every page as the body is written: on 1 MiB
/// GETs that was most of the CPU (perf: page faults inside the copy, and `madvise` when the
/// allocator gave the pages back). A body taken from here is handed to the caller as `Data`
/// without a copy, and its memory comes back here when the last copy of that `Data` is gone,
/// with its pages still mapped for the next body.
///
/// Buffers come in power-of-two sizes from 64 KiB to 16 MiB; larger bodies use plain
/// allocations. At most ``idleLimit`` bytes wait here; beyond that, returned buffers are freed.
///
/// Thread-safety: buffers come back on whatever thread releases the `Data`, so the idle lists
/// live in one struct behind one `Mutex`.
final class BodyBufferPool: Sendable {
    /// The process-wide pool.
    static let shared = BodyBufferPool()

    /// The smallest pooled size; smaller bodies are cheap to allocate.
    static let minimumSize = 64 << 10
    /// The largest pooled size.
    static let maximumSize = 16 << 20
    /// How many idle bytes the pool keeps at most.
    let idleLimit: Int

    private struct Idle {
        /// Idle buffers' addresses (as bit patterns, which are `Sendable`), by size class
        /// (index 0 holds `minimumSize`).
        var buffers: [[UInt]] = Array(repeating: [], count: BodyBufferPool.sizeClassCount)
        var bytes = 0
    }

    private static let sizeClassCount = (maximumSize / minimumSize).trailingZeroBitCount + 1
    private let idle = Mutex(Idle())

    init(idleLimit: Int = 32 << 20) {
        self.idleLimit = idleLimit
    }

    /// The size a request for `count` bytes is rounded to: a pooled size, or `count` itself
    /// when it is larger than any.
    static func size(for count: Int) -> Int {
        guard count > minimumSize else { return minimumSize }
        guard count <= maximumSize else { return count }
        return 1 << (Int.bitWidth - (count - 1).leadingZeroBitCount)
    }

    /// A buffer of `size(for: count)` bytes, uninitialised.
    func take(atLeast count: Int) -> UnsafeMutableRawBufferPointer {
        let size = Self.size(for: count)
        if let index = Self.sizeClass(of: size),
           let reused = idle.withLock({ idle -> UInt? in
               guard let address = idle.buffers[index].popLast() else { return nil }
               idle.bytes -= size
               return address
           }) {
            return UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: reused), count: size)
        }
        return .allocate(byteCount: size, alignment: 16)
    }

    /// Takes back a buffer from ``take(atLeast:)``, to keep or to free.
    func recycle(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let start = buffer.baseAddress else { return }
        if let index = Self.sizeClass(of: buffer.count) {
            let (address, size, limit) = (UInt(bitPattern: start), buffer.count, idleLimit)
            let kept = idle.withLock { idle -> Bool in
                guard idle.bytes + size <= limit else { return false }
                idle.buffers[index].append(address)
                idle.bytes += size
                return true
            }
            if kept { return }
        }
        buffer.deallocate()
    }

    /// The bytes waiting in the pool.
    var idleBytes: Int { idle.withLock { $0.bytes } }

    private static func sizeClass(of size: Int) -> Int? {
        guard size >= minimumSize, size <= maximumSize, size.nonzeroBitCount == 1 else { return nil }
        return (size / minimumSize).trailingZeroBitCount
    }
}
