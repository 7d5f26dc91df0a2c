import Foundation

/// Reads this process's resident memory from /proc, to measure how much a piece of work
/// grew the peak.
enum MemoryProbe {
    /// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS. Linux 4.0 and later.
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .ascii)
    }

    /// Current resident set size, in bytes.
    static var residentBytes: Int { field("VmRSS") }

    /// Peak resident set size since the last reset, in bytes.
    static var peakBytes: Int { field("VmHWM") }

    private static func field(_ name: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .ascii) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
            return (kilobytes ?? 0) * 1024
        }
        return 0
    }
}
