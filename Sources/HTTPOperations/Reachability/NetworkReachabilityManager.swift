import CNetlink
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Whether a host, an address or the internet can be reached, watched through the kernel's
/// routing table: the Linux counterpart of AFNetworking's `AFNetworkReachabilityManager`.
///
/// The network thread holds one netlink socket (link, address and route changes) as a
/// run-loop source; when the kernel reports a change, each monitoring manager asks the
/// kernel which interface a packet to its target would leave through (an `RTM_GETROUTE`
/// lookup, nothing is sent), and reads that interface's kind and state in
/// `/sys/class/net`. A domain is resolved off the network thread, and again on every change.
///
/// Reachable means a route exists through an interface that is up — not that the server
/// answers. Each change of status is delivered once, on ``completionQueue``: to the block,
/// as a ``didChangeNotification``, and to every ``statuses`` stream.
///
/// ```swift
/// let reachability = NetworkReachabilityManager.forDomain("api.example.com")
/// reachability.setReachabilityStatusChangeBlock { status in print(status) }
/// reachability.startMonitoring()
/// ```
public final class NetworkReachabilityManager: Sendable {
    /// What is watched.
    enum Target: Sendable, Equatable {
        /// Any route to the internet: one to 8.8.8.8 or to 2001:4860:4860::8888 (public
        /// addresses; the lookup sends nothing to them).
        case internet
        /// One IPv4 or IPv6 address.
        case address(family: Int32, bytes: [UInt8])
        /// A host name, resolved off the network thread.
        case domain(String)
    }

    /// Posted on ``completionQueue`` when the status changes; `object` is the manager and
    /// `userInfo[NetworkReachabilityManager.statusUserInfoKey]` the new ``Status``.
    public static let didChangeNotification = Notification.Name("HTTPOperationsNetworkReachabilityDidChange")
    /// The `userInfo` key of ``didChangeNotification``'s status.
    public static let statusUserInfoKey = "status"

    /// Why a manager looks again (for the log of a test that fails).
    enum Reason { case started, kernelChange, resolved }

    let target: Target

    /// Every mutable field, behind one lock: the status and where it goes.
    private struct State {
        var status: Status = .unknown
        var isMonitoring = false
        var block: (@Sendable (Status) -> Void)?
        var completionQueue: DispatchQueue = .global()
        var continuations: [UUID: AsyncStream<Status>.Continuation] = [:]
        /// The addresses a domain resolved to last; looked up again on every change.
        var resolved: [(family: Int32, bytes: [UInt8])] = []
    }
    private let state = Mutex(State())

    init(target: Target) {
        self.target = target
    }

    /// Whether any route leads to the internet.
    public static let shared = NetworkReachabilityManager(target: .internet)

    /// A manager for whether the internet can be reached (a route to a public address).
    public static func forInternet() -> NetworkReachabilityManager {
        NetworkReachabilityManager(target: .internet)
    }

    /// A manager for one IPv4 or IPv6 address.
    ///
    /// - Throws: `URLError(.badURL)` when `address` is neither.
    public static func forAddress(_ address: String) throws -> NetworkReachabilityManager {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return NetworkReachabilityManager(target: .address(family: AF_INET, bytes: withUnsafeBytes(of: v4) { Array($0) }))
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, address, &v6) == 1 {
            return NetworkReachabilityManager(target: .address(family: AF_INET6, bytes: withUnsafeBytes(of: v6) { Array($0) }))
        }
        throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "'\(address)' is not an IPv4 or IPv6 address"])
    }

    /// A manager for a host name: reachable when a route leads to any of its addresses.
    public static func forDomain(_ domain: String) -> NetworkReachabilityManager {
        if let literal = try? forAddress(domain) { return literal }
        return NetworkReachabilityManager(target: .domain(domain))
    }

    deinit {
        state.withLock { $0.continuations.values.forEach { $0.finish() } }
    }

    /// The status last seen; ``Status/unknown`` before monitoring starts.
    public var status: Status { state.withLock { $0.status } }

    /// Whether the target is reachable now, as far as the last look saw.
    public var isReachable: Bool { status.isReachable }

    /// The queue the block, the notification and the streams get changes on. Default: a
    /// global concurrent queue (a server has no main queue to spare).
    public var completionQueue: DispatchQueue {
        get { state.withLock { $0.completionQueue } }
        set { state.withLock { $0.completionQueue = newValue } }
    }

    /// Sets the block called with each new status, on ``completionQueue``.
    public func setReachabilityStatusChangeBlock(_ block: (@Sendable (Status) -> Void)?) {
        state.withLock { $0.block = block }
    }

    /// Every status from now on: the current one first (unless still unknown), then each
    /// change. The stream ends when the manager goes away; a slow reader gets the latest.
    public var statuses: AsyncStream<Status> {
        let (stream, continuation) = AsyncStream.makeStream(of: Status.self, bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        let current = state.withLock { state in
            state.continuations[id] = continuation
            return state.status
        }
        if current != .unknown { continuation.yield(current) }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Starts watching: the status is looked at now and on every change the kernel reports.
    /// The network thread keeps a monitoring manager alive until ``stopMonitoring()``.
    public func startMonitoring() {
        let alreadyMonitoring = state.withLock { state in
            defer { state.isMonitoring = true }
            return state.isMonitoring
        }
        guard !alreadyMonitoring else { return }
        NetworkThread.shared.perform { [self] in
            do {
                try NetlinkMonitor.current().add(self)
            } catch {
                // No netlink (a sandbox without it): the status stays unknown.
                return
            }
            evaluate(reason: .started)
        }
    }

    /// Stops watching; the status keeps its last value.
    public func stopMonitoring() {
        state.withLock { $0.isMonitoring = false }
        NetworkThread.shared.perform { [self] in NetlinkMonitor.shared?.remove(self) }
    }

    // MARK: - Looking

    /// Looks at the target again. Network thread only: route lookups are kernel calls that
    /// answer at once; a domain is resolved on a global queue first.
    func evaluate(reason: Reason) {
        switch target {
        case .internet:
            let google4: [UInt8] = [8, 8, 8, 8]
            let google6: [UInt8] = [0x20, 0x01, 0x48, 0x60, 0x48, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x88]
            update(Self.status(of: [(AF_INET, google4), (AF_INET6, google6)]))
        case .address(let family, let bytes):
            update(Self.status(of: [(family, bytes)]))
        case .domain(let name):
            if reason != .resolved {
                // Resolved again on every change: the answer may be another address now.
                DispatchQueue.global().async { [self] in
                    let addresses = Self.resolve(name)
                    NetworkThread.shared.perform { [self] in
                        state.withLock { $0.resolved = addresses }
                        evaluate(reason: .resolved)
                    }
                }
                return
            }
            let addresses = state.withLock { $0.resolved }
            update(addresses.isEmpty ? .notReachable : Self.status(of: addresses))
        }
    }

    /// The best status among `addresses`: reachable through the first one with a route
    /// through an interface that is up.
    static func status(of addresses: [(family: Int32, bytes: [UInt8])]) -> Status {
        for (family, bytes) in addresses {
            let index = bytes.withUnsafeBytes { cnetlink_route_interface(family, $0.baseAddress) }
            guard index > 0, let interface = Interface.of(index: index), interface.isUp else { continue }
            return .reachable(via: interface.kind)
        }
        return .notReachable
    }

    /// The addresses `name` resolves to (getaddrinfo: blocking, so never on the network thread).
    static func resolve(_ name: String) -> [(family: Int32, bytes: [UInt8])] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [(family: Int32, bytes: [UInt8])] = []
        for entry in sequence(first: first, next: { $0.pointee.ai_next }) {
            guard let address = entry.pointee.ai_addr else { continue }
            switch entry.pointee.ai_family {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    addresses.append((AF_INET, withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) }))
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    addresses.append((AF_INET6, withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }))
                }
            default: continue
            }
        }
        return addresses
    }

    /// Records `status`; when it changed, tells the block, the notification and the streams,
    /// once, on the completion queue.
    private func update(_ status: Status) {
        let delivery = state.withLock { state -> (DispatchQueue, (@Sendable (Status) -> Void)?, [AsyncStream<Status>.Continuation])? in
            guard state.isMonitoring, state.status != status else { return nil }
            state.status = status
            return (state.completionQueue, state.block, Array(state.continuations.values))
        }
        guard let (queue, block, continuations) = delivery else { return }
        queue.async { [self] in
            // The notification first: a manager that suspends its queue on it has done so by
            // the time the block runs.
            NotificationCenter.default.post(name: Self.didChangeNotification, object: self,
                                            userInfo: [Self.statusUserInfoKey: status])
            block?(status)
            for continuation in continuations { continuation.yield(status) }
        }
    }
}
