import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Reusable memory for large response bodies.
///
/// A body of a megabyte, allocated and freed per response, is mapped fresh by the allocator
/// each time, and the kernel then zeroes and maps every page as the body is written: on 1 MiB
/// GETs, page faults inside the copy and `madvise` when the allocator gives the pages back
/// would be most of the CPU (Docs/Performance.md, "Fixed so far"). A body taken from here is
/// handed to the caller as `Data` without a copy, and its memory comes back here when the
/// last copy of that `Data` is gone, with its pages still mapped for the next body.
///
/// Buffers come in power-of-two sizes from 64 KiB to 16 MiB; a larger body gets a mapping of
/// its own in transparent huge pages (``mapLarge(_:)``), given back when its `Data` is gone.
/// At most ``idleLimit`` bytes wait here; beyond that, returned buffers are freed.
///
/// Idle buffers decay: one that waited here through a whole ``decayInterval`` (no request
/// of that interval needed it) is given back to the kernel at the end of it. So the pool
/// holds what recent traffic used, not the most that one burst ever did: without decay, the
/// buffers of a burst of concurrent downloads would stay for the life of the process, and a
/// server's resident memory would rise in a step with every new peak (Docs/Reliability.md,
/// the soak). The pool is swept when a buffer is taken or returned, so a pool nobody uses
/// keeps what it has until traffic comes back.
///
/// Pooled sizes are mapped with `mmap` rather than taken from `malloc`, so that a buffer
/// given back leaves resident memory: once one such block has been freed, glibc serves blocks
/// of that size from its heap, where a freed one stays resident.
///
/// Thread-safety: buffers come back on whatever thread releases the `Data`, so the idle lists
/// and the decay bookkeeping live in one struct behind one `Mutex`.
final class BodyBufferPool: Sendable {
    /// The process-wide pool.
    static let shared = BodyBufferPool()

    /// The smallest pooled size; smaller bodies are cheap to allocate.
    static let minimumSize = 64 << 10
    /// The largest pooled size.
    static let maximumSize = 16 << 20
    /// How many idle bytes the pool keeps at most.
    let idleLimit: Int
    /// How long a buffer may wait unused before it is given back.
    let decayInterval: Duration

    private struct Idle {
        /// Idle buffers' addresses (as bit patterns, which are `Sendable`), by size class
        /// (index 0 holds `minimumSize`); each list is used from its end, so its start holds
        /// the buffers idle longest.
        var buffers: [[UInt]] = Array(repeating: [], count: BodyBufferPool.sizeClassCount)
        var bytes = 0
        /// The fewest buffers each list held since the last sweep: that many waited through
        /// the whole interval.
        var fewestSinceSweep: [Int] = Array(repeating: 0, count: BodyBufferPool.sizeClassCount)
        var lastSweep: ContinuousClock.Instant

        /// When a decay interval has passed since the last sweep: takes out the buffers that
        /// stayed idle all through it, to be unmapped outside the lock.
        mutating func sweep(at now: ContinuousClock.Instant, every interval: Duration) -> [UnsafeMutableRawBufferPointer] {
            guard now - lastSweep >= interval else { return [] }
            lastSweep = now
            var expired: [UnsafeMutableRawBufferPointer] = []
            for index in buffers.indices {
                let (count, size) = (fewestSinceSweep[index], BodyBufferPool.minimumSize << index)
                for address in buffers[index].prefix(count) {
                    expired.append(BodyBufferPool.buffer(at: address, size: size))
                }
                buffers[index].removeFirst(count)
                bytes -= count * size
                fewestSinceSweep[index] = buffers[index].count
            }
            return expired
        }
    }

    private static let sizeClassCount = (maximumSize / minimumSize).trailingZeroBitCount + 1
    private let idle: Mutex<Idle>
    private let now: @Sendable () -> ContinuousClock.Instant

    /// - Parameters:
    ///   - idleLimit: How many idle bytes to keep at most.
    ///   - decayInterval: How long a buffer may wait unused before it is given back.
    ///   - now: The clock the decay reads (tests move their own).
    init(idleLimit: Int = 32 << 20, decayInterval: Duration = .seconds(10),
         now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.idleLimit = idleLimit
        self.decayInterval = decayInterval
        self.now = now
        idle = Mutex(Idle(lastSweep: now()))
    }

    deinit {
        idle.withLock { idle in
            for (index, list) in idle.buffers.enumerated() {
                for address in list {
                    Self.unmap(Self.buffer(at: address, size: Self.minimumSize << index))
                }
            }
        }
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
        guard let index = Self.sizeClass(of: size) else { return Self.mapLarge(size) }
        let (now, interval) = (self.now(), decayInterval)
        let (reused, expired) = idle.withLock { idle -> (UInt?, [UnsafeMutableRawBufferPointer]) in
            let address = idle.buffers[index].popLast()
            if address != nil { idle.bytes -= size }
            idle.fewestSinceSweep[index] = min(idle.fewestSinceSweep[index], idle.buffers[index].count)
            return (address, idle.sweep(at: now, every: interval))
        }
        expired.forEach(Self.unmap)
        if let reused {
            return Self.buffer(at: reused, size: size)
        }
        return Self.map(size)
    }

    /// Takes back a buffer from ``take(atLeast:)``, to keep or to free.
    func recycle(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let start = buffer.baseAddress else { return }
        guard let index = Self.sizeClass(of: buffer.count) else { return Self.unmapLarge(buffer) }
        let (address, size, limit) = (UInt(bitPattern: start), buffer.count, idleLimit)
        let (now, interval) = (self.now(), decayInterval)
        let (kept, expired) = idle.withLock { idle -> (Bool, [UnsafeMutableRawBufferPointer]) in
            let kept = idle.bytes + size <= limit
            if kept {
                idle.buffers[index].append(address)
                idle.bytes += size
            }
            return (kept, idle.sweep(at: now, every: interval))
        }
        if !kept { Self.unmap(buffer) }
        expired.forEach(Self.unmap)
    }

    /// The bytes waiting in the pool.
    var idleBytes: Int { idle.withLock { $0.bytes } }

    private static func sizeClass(of size: Int) -> Int? {
        guard size >= minimumSize, size <= maximumSize, size.nonzeroBitCount == 1 else { return nil }
        return (size / minimumSize).trailingZeroBitCount
    }

    /// The buffer of `size` bytes at an idle list's `address`.
    private static func buffer(at address: UInt, size: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: address), count: size)
    }

    /// Fresh pages for a pooled size (page-aligned; the kernel zeroes them on first touch).
    private static func map(_ size: Int) -> UnsafeMutableRawBufferPointer {
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let address, address != MAP_FAILED else {
            // As Swift's own allocation does when memory runs out.
            fatalError("mmap of \(size) bytes for a response body failed: \(String(cString: strerror(errno)))")
        }
        return UnsafeMutableRawBufferPointer(start: address, count: size)
    }

    private static func unmap(_ buffer: UnsafeMutableRawBufferPointer) {
        munmap(buffer.baseAddress, buffer.count)
    }

    // MARK: - Bodies larger than any pooled size

    /// The size of a transparent huge page on x86-64 and arm64 with 4 KiB base pages.
    static let hugePageSize = 2 << 20

    /// Fresh memory for a body larger than any pooled size, used once: a mapping of its own,
    /// aligned to `hugePageSize` and marked `MADV_HUGEPAGE`, so that the kernel maps it in
    /// 2 MiB pages where transparent huge pages are enabled (`always` or `madvise`, Debian's
    /// default). Written once and handed over, such a body took one page fault per 4 KiB
    /// (25,600 for 100 MiB, each a trap, a zeroed page and a page-table update): with huge
    /// pages, one per 2 MiB. Where they are off (`never`), or the kernel has none (`madvise`
    /// fails), the pages are small, as before. The mapping is rounded up to 2 MiB, so a body
    /// holds up to 2 MiB more than its length once written. With `defrag` at `madvise` (the
    /// kernel's default), a fault may compact memory to find a free 2 MiB, on the thread that
    /// writes the body.
    private static func mapLarge(_ size: Int) -> UnsafeMutableRawBufferPointer {
        let length = roundedToHugePages(size)
        // One huge page more than needed, so an aligned start lies within; the rest goes back.
        let region = map(length + hugePageSize)
        let start = UInt(bitPattern: region.baseAddress!)
        let aligned = (start + UInt(hugePageSize) - 1) & ~(UInt(hugePageSize) - 1)
        let head = Int(aligned - start)
        if head > 0 { munmap(region.baseAddress, head) }
        let tail = region.count - head - length
        if tail > 0 { munmap(UnsafeMutableRawPointer(bitPattern: aligned + UInt(length)), tail) }
        let address = UnsafeMutableRawPointer(bitPattern: aligned)!
        _ = madvise(address, length, MADV_HUGEPAGE)
        return UnsafeMutableRawBufferPointer(start: address, count: size)
    }

    /// Gives back a buffer from ``mapLarge(_:)``.
    private static func unmapLarge(_ buffer: UnsafeMutableRawBufferPointer) {
        munmap(buffer.baseAddress, roundedToHugePages(buffer.count))
    }

    private static func roundedToHugePages(_ size: Int) -> Int {
        (size + hugePageSize - 1) / hugePageSize * hugePageSize
    }
}
