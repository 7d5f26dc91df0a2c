import Foundation

extension NetworkReachabilityManager {
    /// Whether the target can be reached, and through what kind of interface.
    public enum Status: Sendable, Equatable, CustomStringConvertible {
        /// Not known yet: monitoring has not started, or the first look has not finished.
        case unknown
        /// No route leads to the target, or the interface it leads through is down.
        case notReachable
        /// A route leads to the target through an interface that is up.
        case reachable(via: Interface)

        /// Whether the status is ``reachable(via:)``.
        public var isReachable: Bool {
            if case .reachable = self { return true }
            return false
        }

        /// `reachable via wired`, `not reachable`, `unknown`.
        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .notReachable: "not reachable"
            case .reachable(let interface): "reachable via \(interface)"
            }
        }
    }

    /// The kind of interface a route leads through, read from `/sys/class/net`.
    public enum Interface: String, Sendable, Equatable {
        /// Ethernet and what looks like it: veth pairs, bridges, bonds (`type` 1).
        case wired
        /// Wi-Fi: the interface has a `wireless` or `phy80211` folder.
        case wireless
        /// A mobile-broadband modem (`DEVTYPE=wwan`).
        case cellular
        /// The loopback interface (`type` 772).
        case loopback
        /// Anything else: tunnels, PPP, InfiniBand.
        case other

        /// The kind of the interface with this index, and whether it is up; nil when it has
        /// gone (its folder is missing).
        static func of(index: Int32) -> (kind: Interface, isUp: Bool)? {
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            guard if_indextoname(UInt32(index), &name) != nil else { return nil }
            let bytes = name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            let folder = "/sys/class/net/" + String(decoding: bytes, as: UTF8.self)
            func read(_ file: String) -> String? {
                (try? String(contentsOfFile: folder + "/" + file, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard let type = read("type") else { return nil }
            // "unknown" is what loopback and many virtual devices report while working.
            let state = read("operstate") ?? "unknown"
            let isUp = state == "up" || state == "unknown"
            let manager = FileManager.default
            let kind: Interface
            if type == "772" {
                kind = .loopback
            } else if manager.fileExists(atPath: folder + "/wireless") || manager.fileExists(atPath: folder + "/phy80211") {
                kind = .wireless
            } else if read("uevent")?.split(separator: "\n").contains("DEVTYPE=wwan") == true {
                kind = .cellular
            } else if type == "1" {
                kind = .wired
            } else {
                kind = .other
            }
            return (kind, isUp)
        }
    }
}
