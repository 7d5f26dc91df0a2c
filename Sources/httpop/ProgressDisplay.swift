import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Shows a transfer's progress on stderr: a bar redrawn in place on a terminal, a plain
/// line every tenth of the way otherwise (logs and pipes get no escape codes).
final class ProgressDisplay: Sendable {
    private struct State {
        var lastDraw = Date.distantPast
        var lastDecile = -1
        /// The total at the first report: a resumed download's rate counts new bytes only.
        var firstTotal: Int64?
    }

    private let state = Mutex(State())
    private let start = Date()
    private let label: String
    private let isTerminal = isatty(STDERR_FILENO) == 1

    init(label: String) {
        self.label = label
    }

    /// Reports `total` bytes of `expected` (-1 when unknown).
    func update(total: Int64, expected: Int64) {
        let now = Date()
        let elapsed = max(now.timeIntervalSince(start), 0.001)
        let first = state.withLock { state -> Int64 in
            if state.firstTotal == nil { state.firstTotal = total }
            return state.firstTotal!
        }
        let rate = Double(total - first) / elapsed
        if isTerminal {
            let due = state.withLock { state -> Bool in
                guard now.timeIntervalSince(state.lastDraw) >= 0.1 || total == expected else { return false }
                state.lastDraw = now
                return true
            }
            guard due else { return }
            write("\r\u{1B}[K" + line(total: total, expected: expected, rate: rate, bar: true))
        } else if expected > 0 {
            let decile = Int(total * 10 / expected)
            let due = state.withLock { state -> Bool in
                guard decile > state.lastDecile else { return false }
                state.lastDecile = decile
                return true
            }
            if due { write(line(total: total, expected: expected, rate: rate, bar: false) + "\n") }
        }
    }

    /// Ends the bar's line, so that a message can follow it.
    func interrupt() {
        if isTerminal { write("\n") }
    }

    /// Ends the display with a summary line.
    func finish(total: Int64, succeeded: Bool) {
        let elapsed = max(Date().timeIntervalSince(start), 0.001)
        let summary = "\(succeeded ? "saved" : "stopped after") \(Self.bytes(Double(total))) in "
            + String(format: "%.2f s (%@/s)", elapsed, Self.bytes(Double(total) / elapsed))
        write((isTerminal ? "\r\u{1B}[K" : "") + label + ": " + summary + "\n")
    }

    private func line(total: Int64, expected: Int64, rate: Double, bar: Bool) -> String {
        guard expected > 0 else {
            return "\(label) \(Self.bytes(Double(total))) \(Self.bytes(rate))/s"
        }
        let fraction = min(1, Double(total) / Double(expected))
        let width = 30
        let filled = Int(fraction * Double(width))
        let drawn = bar ? "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] " : ""
        let eta = rate > 0 ? Double(expected - total) / rate : 0
        return "\(label) \(drawn)\(String(format: "%3d%%", Int(fraction * 100))) "
            + "\(Self.bytes(Double(total)))/\(Self.bytes(Double(expected))) \(Self.bytes(rate))/s ETA \(String(format: "%.0f", eta)) s"
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// `12.3 MB`, in decimal units as download tools print them.
    static func bytes(_ count: Double) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = count
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f %@", value, units[unit])
    }
}
