import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// Bodies in memory: pooled buffers handed over as `Data` without a copy, and given back.
    @Suite struct MemoryBodies {
        static func pattern(_ count: Int, from start: Int = 0) -> [UInt8] {
            (start..<(start + count)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        }

        @Test func pooledSizesArePowersOfTwoWithinBounds() {
            #expect(BodyBufferPool.size(for: 1) == 64 << 10)
            #expect(BodyBufferPool.size(for: 64 << 10) == 64 << 10)
            #expect(BodyBufferPool.size(for: (64 << 10) + 1) == 128 << 10)
            #expect(BodyBufferPool.size(for: 1 << 20) == 1 << 20)
            #expect(BodyBufferPool.size(for: (16 << 20) + 1) == (16 << 20) + 1)
        }

        @Test func aSmallBodyStaysInData() {
            let pool = BodyBufferPool()
            let body = MemoryBody(pool: pool)
            let bytes = Self.pattern(1000)
            bytes.withUnsafeBytes { body.append($0) }
            #expect(body.take() == Data(bytes))
            #expect(pool.idleBytes == 0)
        }

        @Test func aLargeBodyIsHandedOverWithoutACopyAndComesBack() throws {
            let pool = BodyBufferPool()
            var data: Data? = {
                let body = MemoryBody(pool: pool)
                body.reserve(1 << 20)
                for chunk in 0..<64 {
                    Self.pattern(16 << 10, from: chunk * (16 << 10)).withUnsafeBytes { body.append($0) }
                }
                return body.take()
            }()
            #expect(data == Data(Self.pattern(1 << 20)))
            #expect(pool.idleBytes == 0, "the buffer belongs to the Data while it lives")
            data = nil
            #expect(pool.idleBytes == 1 << 20)
            // The next body of that size reuses it.
            let body = MemoryBody(pool: pool)
            body.reserve(1 << 20)
            #expect(pool.idleBytes == 0)
            _ = data
        }

        @Test func aBodyLongerThanAnnouncedGrowsIntact() {
            let pool = BodyBufferPool()
            let body = MemoryBody(pool: pool)
            body.reserve(100)
            let bytes = Self.pattern(300_000)
            for start in stride(from: 0, to: bytes.count, by: 7_000) {
                bytes[start..<min(start + 7_000, bytes.count)].withUnsafeBytes { body.append($0) }
            }
            #expect(body.count == bytes.count)
            #expect(body.take() == Data(bytes))
        }

        @Test func aCallersChangesToTheDataAreTheirsAndTheBufferStillComesBackOnce() {
            let pool = BodyBufferPool()
            let body = MemoryBody(pool: pool)
            let bytes = Self.pattern(100_000)
            bytes.withUnsafeBytes { body.append($0) }
            var data = body.take()
            let copy = data
            data[0] ^= 0xFF
            data.append(contentsOf: Self.pattern(1 << 20))
            #expect(copy == Data(bytes), "a copy taken before the change keeps the body")
            #expect(data.count == bytes.count + (1 << 20))
            #expect(data.prefix(1) == Data([bytes[0] ^ 0xFF]))
            data = Data()
            #expect(pool.idleBytes == 0, "the copy still holds the buffer")
            _ = consume copy
            #expect(pool.idleBytes == BodyBufferPool.size(for: bytes.count))
        }

        @Test func aBodyNeverTakenGivesItsBufferBack() {
            let pool = BodyBufferPool()
            do {
                let body = MemoryBody(pool: pool)
                Self.pattern(200_000).withUnsafeBytes { body.append($0) }
                body.removeAll()
                #expect(body.count == 0)
            }
            #expect(pool.idleBytes == 256 << 10)
        }

        @Test func thePoolKeepsNoMoreThanItsLimit() {
            let pool = BodyBufferPool(idleLimit: 2 << 20)
            let buffers = (0..<4).map { _ in pool.take(atLeast: 1 << 20) }
            buffers.forEach(pool.recycle)
            #expect(pool.idleBytes == 2 << 20)
        }
    }
}
