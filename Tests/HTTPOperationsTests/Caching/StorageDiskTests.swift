import Foundation
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct StorageDiskTests {
        static func entry(_ name: String, size: Int = 100) -> CachedResponse {
            makeCachedResponse(key: "GET https://example.com/\(name)", fields: [("Content-Type", "text/plain")],
                         body: String(repeating: "x", count: size))
        }

        static func fileURL(_ directory: URL, _ key: String) -> URL {
            directory.appendingPathComponent(CacheFileFormat.fileName(for: key))
        }

        @Test func roundTripAcrossInstances() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let response = makeCachedResponse(
                fields: [("Date", cacheHTTPDate(0)), ("Vary", "Accept"), ("X-Repeat", "1"), ("x-repeat", "2")],
                body: "payload \u{1F600}", requestFields: [("Accept", "text/html")],
                requestTime: Date(timeIntervalSince1970: 1_700_000_000.125), responseTime: Date(timeIntervalSince1970: 1_700_000_000.987_654_321))
            let first = try HTTPCacheStorage(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
            first.store(response)
            let second = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            #expect(second.diskUsage == first.diskUsage)
            #expect(second.diskUsage > 0)
            #expect(second.load(key: response.key, requestFields: [("Accept", "text/html")]) == response)
            #expect(second.load(key: response.key, requestFields: [("Accept", "text/plain")]) == nil)
            #expect(second.load(key: "GET https://example.com/other") == nil)
        }

        @Test func diskHitIsPromotedToMemory() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory).store(Self.entry("a"))
            let storage = try HTTPCacheStorage(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
            #expect(storage.memoryUsage == 0)
            #expect(storage.load(key: Self.entry("a").key) == Self.entry("a"))
            #expect(storage.memoryUsage == Self.entry("a").byteCount)
        }

        @Test func sizeBoundEvictsLeastRecentlyUsed() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let fileSize = try CacheFileFormat.encode(Self.entry("a")).count
            let storage = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: fileSize * 2 + fileSize / 2, directory: directory)
            storage.store(Self.entry("a"))
            storage.store(Self.entry("b"))
            #expect(storage.load(key: Self.entry("a").key) != nil)  // a becomes most recent
            storage.store(Self.entry("c"))
            #expect(storage.diskUsage == fileSize * 2)
            #expect(try cacheEntryFiles(in: directory) == [CacheFileFormat.fileName(for: Self.entry("a").key),
                                                      CacheFileFormat.fileName(for: Self.entry("c").key)].sorted())
            #expect(storage.load(key: Self.entry("b").key) == nil)
        }

        @Test func restartUsesModificationDatesAsLastUse() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let fileSize = try CacheFileFormat.encode(Self.entry("a")).count
            let first = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            first.store(Self.entry("a"))
            first.store(Self.entry("b"))
            // a was used later than b in the previous run.
            try FileManager.default.setAttributes([.modificationDate: cacheTime(100)], ofItemAtPath: Self.fileURL(directory, Self.entry("a").key).path)
            try FileManager.default.setAttributes([.modificationDate: cacheTime(50)], ofItemAtPath: Self.fileURL(directory, Self.entry("b").key).path)
            let second = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: fileSize * 2, directory: directory)
            second.store(Self.entry("c"))
            #expect(second.load(key: Self.entry("b").key) == nil)
            #expect(second.load(key: Self.entry("a").key) != nil)
            #expect(second.load(key: Self.entry("c").key) != nil)
        }

        @Test func smallerCapacityAtStartupEvicts() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let fileSize = try CacheFileFormat.encode(Self.entry("a")).count
            let first = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            for name in ["a", "b", "c"] { first.store(Self.entry(name)) }
            let second = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: fileSize, directory: directory)
            #expect(second.diskUsage == fileSize)
            #expect(try cacheEntryFiles(in: directory).count == 1)
        }

        @Test(arguments: [0, 5, 12, 40, -1])
        func truncatedFileIsAMissAndRemoved(keepBytes: Int) throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let first = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            first.store(Self.entry("a"))
            let url = Self.fileURL(directory, Self.entry("a").key)
            let content = try Data(contentsOf: url)
            // -1 drops only the last body byte.
            try content.prefix(keepBytes < 0 ? content.count - 1 : keepBytes).write(to: url)
            let second = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            #expect(second.load(key: Self.entry("a").key) == nil)
            #expect(!FileManager.default.fileExists(atPath: url.path))
            #expect(second.diskUsage == 0)
        }

        @Test func corruptMetadataIsAMissAndRemoved() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let storage = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            storage.store(Self.entry("a"))
            let url = Self.fileURL(directory, Self.entry("a").key)
            var content = try Data(contentsOf: url)
            content[content.startIndex + 12] = UInt8(ascii: "!")  // inside the JSON
            try content.write(to: url)
            #expect(storage.load(key: Self.entry("a").key) == nil)
            #expect(!FileManager.default.fileExists(atPath: url.path))
            #expect(storage.diskUsage == 0)
        }

        @Test func foreignFilesAreLeftAloneAndTemporaryFilesRemoved() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let foreign = directory.appendingPathComponent("notes.txt")
            let leftover = directory.appendingPathComponent(CacheFileFormat.temporaryPrefix + "crashed")
            try Data("mine".utf8).write(to: foreign)
            try Data("half".utf8).write(to: leftover)
            let storage = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            #expect(storage.diskUsage == 0)
            #expect(!FileManager.default.fileExists(atPath: leftover.path))
            storage.store(Self.entry("a"))
            storage.removeAll()
            #expect(storage.diskUsage == 0)
            #expect(try cacheEntryFiles(in: directory).isEmpty)
            #expect(try Data(contentsOf: foreign) == Data("mine".utf8))
        }

        @Test func fileWithAnotherKeyIsAMissButKept() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let storage = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            storage.store(Self.entry("a"))
            // Simulate a hash collision: b's file name holds a's entry.
            let aURL = Self.fileURL(directory, Self.entry("a").key)
            let bURL = Self.fileURL(directory, Self.entry("b").key)
            try FileManager.default.copyItem(at: aURL, to: bURL)
            let reopened = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            #expect(reopened.load(key: Self.entry("b").key) == nil)
            #expect(FileManager.default.fileExists(atPath: bURL.path))
        }

        @Test func entryLargerThanDiskCapacityIsNotStored() throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let storage = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1_000, directory: directory)
            storage.store(Self.entry("a", size: 100))
            #expect(storage.diskUsage > 0)
            storage.store(Self.entry("a", size: 2_000))
            #expect(storage.load(key: Self.entry("a").key) == nil)
            #expect(storage.diskUsage == 0)
            #expect(try cacheEntryFiles(in: directory).isEmpty)
        }

        @Test func permissions() throws {
            let parent = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: parent) }
            let directory = parent.appendingPathComponent("nested/cache", isDirectory: true)
            let storage = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            storage.store(Self.entry("a"))
            #expect(try HTTPOperationsTests.permissions(of: directory) == 0o700)
            #expect(try HTTPOperationsTests.permissions(of: Self.fileURL(directory, Self.entry("a").key)) == 0o600)
        }

        @Test func fileNamesAreStableFNV1a() {
            // Published FNV-1a 64 test vectors.
            #expect(CacheFileFormat.fnv1a64("".utf8) == 0xcbf2_9ce4_8422_2325)
            #expect(CacheFileFormat.fnv1a64("a".utf8) == 0xaf63_dc4c_8601_ec8c)
            #expect(CacheFileFormat.fileName(for: "") == "cbf29ce484222325.httpcache")
            #expect(CacheFileFormat.isEntryFileName(CacheFileFormat.fileName(for: cacheTestKey)))
            #expect(!CacheFileFormat.isEntryFileName("notes.txt"))
            #expect(!CacheFileFormat.isEntryFileName("CBF29CE484222325.httpcache"))
        }

        @Test func concurrentStoresAndLoads() async throws {
            let directory = makeCacheDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let memoryCapacity = 5_000
            let diskCapacity = 20_000
            let storage = try HTTPCacheStorage(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, directory: directory)
            let allGood = await withTaskGroup(of: Bool.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        var good = true
                        for round in 0..<60 {
                            let name = "k\((task * 7 + round) % 24)"
                            let entry = Self.entry(name, size: 50 + (round % 5) * 40)
                            switch round % 4 {
                            case 0, 1: storage.store(entry)
                            case 2: if let loaded = storage.load(key: entry.key) { good = good && loaded.key == entry.key }
                            default: storage.remove(key: Self.entry("k\(round % 24)").key)
                            }
                        }
                        return good
                    }
                }
                return await group.reduce(true) { $0 && $1 }
            }
            #expect(allGood)
            #expect(storage.memoryUsage <= memoryCapacity)
            #expect(storage.diskUsage <= diskCapacity)
            // The index agrees with the directory, and every file decodes.
            let files = try cacheEntryFiles(in: directory)
            let sizes = try files.map { try Data(contentsOf: directory.appendingPathComponent($0)) }
            #expect(storage.diskUsage == sizes.reduce(0) { $0 + $1.count })
            #expect(sizes.allSatisfy { CacheFileFormat.decode($0) != nil })
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { $0.hasSuffix(".httpcache") })
            // A restart sees the same usage.
            let reopened = try HTTPCacheStorage(memoryCapacity: 0, diskCapacity: diskCapacity, directory: directory)
            #expect(reopened.diskUsage == storage.diskUsage)
        }
    }
}
