import Foundation
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct StorageMemoryTests {
        /// An entry of exactly `size` bytes (no header fields, so byteCount is the body).
        static func entry(_ name: String, size: Int = 100) -> CachedResponse {
            makeCachedResponse(key: "GET https://example.com/\(name)", fields: [], body: String(repeating: "x", count: size))
        }

        @Test func byteCountCountsBodyAndHeaderLines() {
            let response = makeCachedResponse(fields: [("A", "bc"), ("De", "f")], body: "12345")
            #expect(response.byteCount == 5 + (1 + 2 + 4) + (2 + 1 + 4))
        }

        @Test func evictsLeastRecentlyUsedByBytes() throws {
            let storage = try HTTPCacheStorage(memoryCapacity: 250, diskCapacity: 0, directory: nil)
            storage.store(Self.entry("a"))
            storage.store(Self.entry("b"))
            #expect(storage.load(key: Self.entry("a").key) != nil)  // a is now the most recent
            storage.store(Self.entry("c"))
            #expect(storage.load(key: Self.entry("b").key) == nil)
            #expect(storage.load(key: Self.entry("a").key) == Self.entry("a"))
            #expect(storage.load(key: Self.entry("c").key) == Self.entry("c"))
            #expect(storage.memoryUsage == 200)
        }

        @Test func replacingAnEntryUpdatesUsage() throws {
            let storage = try HTTPCacheStorage(memoryCapacity: 1_000, diskCapacity: 0, directory: nil)
            storage.store(Self.entry("a", size: 100))
            storage.store(Self.entry("a", size: 300))
            #expect(storage.memoryUsage == 300)
            #expect(storage.load(key: Self.entry("a").key)?.body.count == 300)
        }

        @Test func entryLargerThanCapacityIsNotStoredAndDropsTheOldOne() throws {
            let storage = try HTTPCacheStorage(memoryCapacity: 150, diskCapacity: 0, directory: nil)
            storage.store(Self.entry("a", size: 100))
            storage.store(Self.entry("a", size: 151))
            #expect(storage.load(key: Self.entry("a").key) == nil)
            #expect(storage.memoryUsage == 0)
        }

        @Test func removeAndRemoveAll() throws {
            let storage = try HTTPCacheStorage(memoryCapacity: 1_000, diskCapacity: 0, directory: nil)
            storage.store(Self.entry("a"))
            storage.store(Self.entry("b"))
            storage.remove(key: Self.entry("a").key)
            #expect(storage.load(key: Self.entry("a").key) == nil)
            #expect(storage.memoryUsage == 100)
            storage.removeAll()
            #expect(storage.load(key: Self.entry("b").key) == nil)
            #expect(storage.memoryUsage == 0)
        }

        @Test func zeroCapacityStoresNothing() throws {
            let storage = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 0, directory: nil)
            storage.store(Self.entry("a", size: 0))
            #expect(storage.load(key: Self.entry("a").key) == nil)
        }

        @Test func lruOrder() {
            var order = LRUOrder<String>()
            for key in ["a", "b", "c"] { order.touch(key) }
            order.touch("a")
            #expect(order.keysFromOldest == ["b", "c", "a"])
            order.remove("c")
            #expect(order.keysFromOldest == ["b", "a"])
            #expect(order.oldest == "b")
            #expect(order.newest == "a")
            order.remove("b")
            order.remove("a")
            #expect(order.count == 0)
            #expect(order.oldest == nil && order.newest == nil)
        }
    }
}
