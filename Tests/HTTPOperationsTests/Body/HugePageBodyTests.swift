import Foundation
@testable import HTTPOperations
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension AllTests {
    /// A response body larger than any pooled buffer is written once into fresh memory: in
    /// 4 KiB pages that is a page fault per 4 KiB (25,600 for 100 MiB). The pool maps such a
    /// body aligned to 2 MiB and asks for transparent huge pages (issue 27, item 3).
    @Suite struct HugePageBodies {
        /// The machine's transparent huge page mode for 2 MiB pages: `always`, `madvise` or
        /// `never` (the 2 MiB size's own setting where the kernel has one and it does not
        /// inherit), or `unsupported` for a kernel built without them.
        static func transparentHugePageMode() throws -> String {
            func selected(_ path: String) throws -> String? {
                guard FileManager.default.fileExists(atPath: path) else { return nil }
                let text = try String(contentsOfFile: path, encoding: .utf8)
                guard let open = text.firstIndex(of: "["), let close = text.firstIndex(of: "]") else {
                    throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: path])
                }
                return String(text[text.index(after: open)..<close])
            }
            let base = "/sys/kernel/mm/transparent_hugepage"
            if let own = try selected(base + "/hugepages-2048kB/enabled"), own != "inherit" { return own }
            return try selected(base + "/enabled") ?? "unsupported"
        }

        /// Minor page faults of this process so far.
        static func minorFaults() -> Int {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            return usage.ru_minflt
        }

        /// The `AnonHugePages` of the mapping that holds `address` (the kernel may have merged
        /// it with a neighbour of the same kind), from /proc/self/smaps, in KiB.
        static func anonHugePagesKiB(at address: UnsafeMutableRawPointer) throws -> Int {
            // Read to the end: a /proc file says it is empty, and one read returns a page of it.
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/smaps"))
            defer { try? handle.close() }
            let smaps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
            let target = UInt(bitPattern: address)
            var inMapping = false
            for line in smaps.split(separator: "\n") {
                let range = line.prefix { !$0.isWhitespace }.split(separator: "-")
                if range.count == 2, let low = UInt(range[0], radix: 16), let high = UInt(range[1], radix: 16) {
                    inMapping = low <= target && target < high
                } else if inMapping, line.hasPrefix("AnonHugePages:") {
                    return Int(line.split(separator: " ")[1]) ?? -1
                }
            }
            throw CocoaError(.fileReadUnknown, userInfo: [NSDebugDescriptionErrorKey: "no mapping holds \(address) in /proc/self/smaps"])
        }

        @Test func aBodyLargerThanAnyPooledBufferIsMappedInHugePages() throws {
            let mode = try Self.transparentHugePageMode()
            let size = 100 << 20
            let buffer = BodyBufferPool.shared.take(atLeast: size)
            defer { BodyBufferPool.shared.recycle(buffer) }
            #expect(buffer.count == size)
            let start = try #require(buffer.baseAddress)
            #expect(UInt(bitPattern: start) % UInt(BodyBufferPool.hugePageSize) == 0, "aligned to a huge page")

            let before = Self.minorFaults()
            // Written once, as a body is: one byte per 4 KiB page is enough to fault each in.
            for offset in stride(from: 0, to: size, by: 4096) { buffer[offset] = UInt8(truncatingIfNeeded: offset >> 12) }
            let faults = Self.minorFaults() - before
            let hugeKiB = try Self.anonHugePagesKiB(at: start)
            print("transparent huge pages [\(mode)]: \(faults) minor faults for 100 MiB, \(hugeKiB) KiB in huge pages")

            if mode == "never" || mode == "unsupported" {
                // Nothing to ask for: the pages are small, and the buffer still works.
                #expect(hugeKiB == 0)
            } else {
                // Most of it in huge pages (the kernel may fall back for some, when it finds no
                // free 2 MiB to give), and far fewer faults than one per 4 KiB (25,600).
                #expect(hugeKiB >= (size >> 10) / 2, "\(hugeKiB) KiB of \(size >> 10) in huge pages")
                if !underSanitizer {  // a sanitizer's shadow memory faults on its own
                    #expect(faults < 25_600 / 4, "\(faults) minor faults")
                }
            }
            #expect(buffer[4096 * 7] == 7)
        }

        /// The memory goes back whole, up to the 2 MiB the mapping was rounded to: a body of
        /// 16 MiB and one byte is mapped as 18 MiB, and none of it stays.
        @Test func aLargeBodysMappingIsGivenBackWhole() throws {
            let size = (16 << 20) + 1
            let buffer = BodyBufferPool.shared.take(atLeast: size)
            let start = try #require(buffer.baseAddress)
            buffer[size - 1] = 1
            let beyondTheBody = start + (17 << 20) + 4096  // in the rounding, past the body
            _ = try Self.anonHugePagesKiB(at: beyondTheBody)  // mapped
            BodyBufferPool.shared.recycle(buffer)
            #expect(throws: CocoaError.self) { try Self.anonHugePagesKiB(at: start) }
            #expect(throws: CocoaError.self) { try Self.anonHugePagesKiB(at: beyondTheBody) }
        }
    }
}
