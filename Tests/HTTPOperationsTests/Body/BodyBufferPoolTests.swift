import Foundation
@testable import HTTPOperations
import Synchronization
import Testing

extension AllTests {
    /// The body buffer pool gives back what traffic stopped using: a burst's buffers must not
    /// stay for the life of a server (the soak's resident memory rose in steps with each new
    /// burst of concurrent downloads).
    @Suite struct BodyBufferPoolDecay {
        /// A clock the test moves by hand, so decay is decided without waiting.
        final class ManualClock: Sendable {
            private let instant = Mutex(ContinuousClock.now)
            var now: ContinuousClock.Instant { instant.withLock { $0 } }
            func advance(by duration: Duration) { instant.withLock { $0 += duration } }
        }

        static let interval = Duration.seconds(10)
        static let size = 256 << 10

        static func pool(_ clock: ManualClock) -> BodyBufferPool {
            BodyBufferPool(decayInterval: interval, now: { clock.now })
        }

        /// Takes `count` buffers at once and gives them back, as `count` downloads in flight would.
        static func use(_ count: Int, of size: Int = size, from pool: BodyBufferPool) {
            let buffers = (0..<count).map { _ in pool.take(atLeast: size) }
            buffers.forEach(pool.recycle)
        }

        @Test func buffersUsedInEveryIntervalStay() {
            // Given four downloads in flight, interval after interval
            let clock = ManualClock()
            let pool = Self.pool(clock)
            Self.use(4, from: pool)
            for _ in 0..<3 {
                clock.advance(by: Self.interval)
                Self.use(4, from: pool)
                // Then all four buffers stay ready for the next round
                #expect(pool.idleBytes == 4 * Self.size)
            }
        }

        @Test func buffersIdleThroughAWholeIntervalAreGivenBack() {
            // Given a burst of eight downloads, then one at a time
            let clock = ManualClock()
            let pool = Self.pool(clock)
            Self.use(8, from: pool)
            #expect(pool.idleBytes == 8 * Self.size)
            clock.advance(by: Self.interval)
            Self.use(1, from: pool)
            #expect(pool.idleBytes == 8 * Self.size, "the burst was part of the interval that just ended")
            // When a whole interval passes in which one buffer was enough
            clock.advance(by: Self.interval)
            Self.use(1, from: pool)
            // Then the seven it never needed are gone and the one in use stays
            #expect(pool.idleBytes == Self.size)
            clock.advance(by: Self.interval)
            Self.use(1, from: pool)
            #expect(pool.idleBytes == Self.size)
        }

        @Test func eachSizeDecaysOnItsOwn() {
            // Given idle buffers of two sizes, of which only the smaller stays in use
            let clock = ManualClock()
            let pool = Self.pool(clock)
            Self.use(2, of: 1 << 20, from: pool)
            Self.use(2, of: 64 << 10, from: pool)
            for _ in 0..<2 {
                clock.advance(by: Self.interval)
                Self.use(2, of: 64 << 10, from: pool)
            }
            // Then the unused megabyte buffers are given back, the small ones kept
            #expect(pool.idleBytes == 2 * (64 << 10))
        }

        @Test(.enabled(if: residentMemoryIsMeaningful, "RSS under AddressSanitizer measures the sanitizer"))
        func givenBackBuffersLeaveResidentMemory() throws {
            // Given 16 MiB of buffers written (so resident), then idle in the pool
            let clock = ManualClock()
            let pool = Self.pool(clock)
            let count = 64
            let buffers = (0..<count).map { _ in pool.take(atLeast: Self.size) }
            for buffer in buffers { buffer.initializeMemory(as: UInt8.self, repeating: 0xA5) }
            buffers.forEach(pool.recycle)
            let idle = try MemoryProbe.residentBytes()
            // When two intervals pass in which only another size is used
            for _ in 0..<2 {
                clock.advance(by: Self.interval)
                Self.use(1, of: 64 << 10, from: pool)
            }
            // Then their pages left the process (freed heap memory would have stayed resident)
            let after = try MemoryProbe.residentBytes()
            print("body buffer pool: RSS \(idle) -> \(after) bytes after giving back \(count * Self.size)")
            #expect(pool.idleBytes == 64 << 10)
            #expect(idle - after >= count * Self.size * 3 / 4)
        }
    }
}
