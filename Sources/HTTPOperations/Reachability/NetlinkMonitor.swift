import CNetlink
import CoreFoundation
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The one netlink socket of the process, on the network thread's run loop: when the kernel
/// reports a link, address or route change, every monitoring ``NetworkReachabilityManager``
/// looks again.
///
/// The socket sits in an epoll set of its own, whose descriptor is the port of a version-1
/// run-loop source, like curl's sockets: no polling and no thread of its own. Not the socket
/// itself as the port: CoreFoundation on Linux reads 8 bytes from a port that fires (its ports
/// are eventfds), which on a netlink socket takes a whole message away. That lost the
/// message of a link coming back up, and the status stayed "not reachable" (reading an epoll
/// descriptor fails harmlessly). The kernel sends changes in bursts (a link going
/// down removes its addresses and routes: a dozen messages), so a change arms a short timer
/// and the managers look once, when the burst is over. Confined to the network thread.
final class NetlinkMonitor {
    /// The monitor of the shared network thread; made by the first manager that starts.
    nonisolated(unsafe) static var shared: NetlinkMonitor?

    /// How long after the last message of a burst the managers look.
    static let settleDelay: CFTimeInterval = 0.05

    private let descriptor: Int32
    /// The epoll set holding ``descriptor``: the run-loop source's port.
    private let epollDescriptor: Int32
    private var source: CFRunLoopSource?
    private var timer: CFRunLoopTimer?
    /// Whether the timer will fire for changes already read.
    private var lookScheduled = false
    /// The managers monitoring, keyed by identity.
    private var watchers: [ObjectIdentifier: NetworkReachabilityManager] = [:]

    /// The monitor for the current (network) thread's run loop.
    static func current() throws -> NetlinkMonitor {
        if let shared { return shared }
        let monitor = try NetlinkMonitor(runLoop: CFRunLoopGetCurrent())
        shared = monitor
        return monitor
    }

    private init(runLoop: CFRunLoop) throws {
        descriptor = cnetlink_open_monitor()
        guard descriptor >= 0 else {
            throw URLError(.cannotLoadFromNetwork, userInfo: [NSLocalizedDescriptionKey: "netlink socket: errno \(errno)"])
        }
        epollDescriptor = cnetlink_epoll_for(descriptor)
        guard epollDescriptor >= 0 else {
            let failure = errno
            close(descriptor)
            throw URLError(.cannotLoadFromNetwork, userInfo: [NSLocalizedDescriptionKey: "epoll for netlink: errno \(failure)"])
        }
        var context = CFRunLoopSourceContext1()
        context.version = 1
        context.info = Unmanaged.passUnretained(self).toOpaque()
        context.getPort = { info in Unmanaged<NetlinkMonitor>.fromOpaque(info!).takeUnretainedValue().epollDescriptor }
        context.perform = { info in Unmanaged<NetlinkMonitor>.fromOpaque(info!).takeUnretainedValue().readChanges() }
        source = withUnsafeMutablePointer(to: &context) { pointer in
            pointer.withMemoryRebound(to: CFRunLoopSourceContext.self, capacity: 1) {
                CFRunLoopSourceCreate(kCFAllocatorDefault, 0, $0)
            }
        }
        CFRunLoopAddSource(runLoop, source, kCFRunLoopDefaultMode)
        var timerContext = CFRunLoopTimerContext()
        timerContext.info = Unmanaged.passUnretained(self).toOpaque()
        // Repeating with an interval of decades: moved, never invalidated by firing.
        timer = CFRunLoopTimerCreate(kCFAllocatorDefault, .greatestFiniteMagnitude, 1e9, 0, 0, { _, info in
            Unmanaged<NetlinkMonitor>.fromOpaque(info!).takeUnretainedValue().lookAgain()
        }, &timerContext)
        CFRunLoopAddTimer(runLoop, timer, kCFRunLoopDefaultMode)
    }

    /// Starts telling `manager` about changes.
    func add(_ manager: NetworkReachabilityManager) {
        watchers[ObjectIdentifier(manager)] = manager
    }

    /// Stops telling `manager` about changes.
    func remove(_ manager: NetworkReachabilityManager) {
        watchers[ObjectIdentifier(manager)] = nil
    }

    /// The socket is readable: read everything (CF watches it edge-triggered), then look once
    /// the burst has settled.
    private func readChanges() {
        guard cnetlink_drain(descriptor) != 0, !lookScheduled else { return }
        // Armed once per burst, from its first message; never moved later (a CF timer moved
        // to a later date while armed did not fire again on this toolchain: the look after a
        // link came back up never happened).
        lookScheduled = true
        CFRunLoopTimerSetNextFireDate(timer, CFAbsoluteTimeGetCurrent() + Self.settleDelay)
    }

    private func lookAgain() {
        lookScheduled = false
        for manager in watchers.values { manager.evaluate(reason: .kernelChange) }
    }
}
