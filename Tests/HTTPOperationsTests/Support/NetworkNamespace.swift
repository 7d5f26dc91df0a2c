import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A network namespace joined to this one by a veth pair, made by the tests with `ip` and
/// removed by ``remove()`` (deleting the namespace deletes the pair): a real link the tests
/// can cut and restore, with a server on the other side.
///
/// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); ``make()`` returns nil where namespaces
/// cannot be made, and the tests say so and skip. CI runs as root.
struct NetworkNamespace {
    let name: String
    /// The veth end in this namespace.
    let hostInterface: String
    /// The veth end in the other namespace.
    let innerInterface: String
    /// This side's address (/30).
    let hostAddress: String
    /// The other side's address, where its servers listen.
    let innerAddress: String
    /// The /24 both addresses are in, reachable only through the link.
    var privateNetwork: String { innerAddress.split(separator: ".").prefix(3).joined(separator: ".") + ".0/24" }

    /// Whether this process may make namespaces: root, and `ip netns` works.
    static let isAvailable: Bool = {
        guard getuid() == 0 else { return false }
        let probe = "httpop-probe-\(getpid())"
        guard ip(["netns", "add", probe]) == 0 else { return false }
        ip(["netns", "del", probe])
        return true
    }()

    /// A new namespace and link, both up, or nil when namespaces cannot be made here.
    static func make(_ tag: Int) -> NetworkNamespace? {
        guard isAvailable else { return nil }
        let id = (Int(getpid()) * 7 + tag) % 250 + 1
        let space = NetworkNamespace(name: "httpop-\(getpid())-\(tag)", hostInterface: "hv\(getpid() % 100000)t\(tag)",
                                     innerInterface: "nv\(getpid() % 100000)t\(tag)",
                                     hostAddress: "10.199.\(id).1", innerAddress: "10.199.\(id).2")
        let steps: [[String]] = [
            ["netns", "add", space.name],
            ["link", "add", space.hostInterface, "type", "veth", "peer", "name", space.innerInterface, "netns", space.name],
            ["addr", "add", space.hostAddress + "/30", "dev", space.hostInterface],
            ["link", "set", space.hostInterface, "up"],
            ["-n", space.name, "addr", "add", space.innerAddress + "/30", "dev", space.innerInterface],
            ["-n", space.name, "link", "set", space.innerInterface, "up"],
            ["-n", space.name, "link", "set", "lo", "up"],
            // Without the link, the kernel would send the far address to the default gateway
            // (and call it reachable, rightly). An unreachable route for the /24 makes the
            // link the only way there, like a private network behind one interface.
            ["route", "add", "unreachable", space.privateNetwork],
        ]
        for step in steps where ip(step) != 0 {
            space.remove()
            return nil
        }
        return space
    }

    /// Takes this side of the link down (its routes go with it) or up.
    func setHostSide(up: Bool) {
        ip(["link", "set", hostInterface, up ? "up" : "down"])
    }

    /// Takes the other side down (this side loses its carrier, its route stays) or up.
    func setInnerSide(up: Bool) {
        ip(["-n", name, "link", "set", innerInterface, up ? "up" : "down"])
    }

    /// The command that runs `arguments` inside the namespace.
    func command(_ arguments: [String]) -> (executable: String, arguments: [String]) {
        ("/usr/sbin/ip", ["netns", "exec", name] + arguments)
    }

    /// Stops every process in the namespace (its servers), then deletes it and its link.
    func remove() {
        let pids = Process()
        pids.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        pids.arguments = ["netns", "pids", name]
        let output = Pipe()
        pids.standardOutput = output
        pids.standardError = FileHandle.nullDevice
        if (try? pids.run()) != nil {
            let listed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            pids.waitUntilExit()
            for pid in listed.split(separator: "\n").compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
        }
        ip(["netns", "del", name])
        ip(["route", "del", "unreachable", privateNetwork])
    }

    @discardableResult
    static func ip(_ arguments: [String]) -> Int32 {
        run("/usr/sbin/ip", arguments)
    }

    @discardableResult
    private func ip(_ arguments: [String]) -> Int32 {
        Self.ip(arguments)
    }
}
