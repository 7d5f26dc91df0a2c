import Foundation

/// Reads this process's resident memory from /proc, to measure how much a piece of work
/// grew the peak. A probe that cannot read /proc throws: a reading of 0 would let any
/// memory test pass.
enum MemoryProbe {
    struct Unreadable: Error, CustomStringConvertible {
        let what: String
        var description: String { "cannot read \(what) from /proc/self/status" }
    }

    /// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS. Linux 4.0 and later.
    static func resetPeak() throws {
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .ascii)
    }

    /// Current resident set size, in bytes.
    static func residentBytes() throws -> Int { try field("VmRSS") }

    /// Peak resident set size since the last reset, in bytes.
    static func peakBytes() throws -> Int { try field("VmHWM") }

    private static func field(_ name: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .ascii)
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            if let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) }),
               kilobytes > 0 {
                return kilobytes * 1024
            }
        }
        throw Unreadable(what: name)
    }
}

/// Whether resident memory measures the code under test. Not under AddressSanitizer, whose
/// quarantine and shadow memory grow with every allocation (256 MiB through a download grew
/// RSS by 250 MiB with the default quarantine, 36 MiB with an 8 MiB one); that run checks
/// memory errors, the plain run checks memory use.
#if HTTPOPERATIONS_ASAN
let residentMemoryIsMeaningful = false
#else
let residentMemoryIsMeaningful = true
#endif
