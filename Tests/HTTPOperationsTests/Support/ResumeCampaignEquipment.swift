import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Equipment

/// The campaign's servers, one set per process: the adversarial server, TLS in front of it,
/// and the proxy.
final class CampaignServers: Sendable {
    let server: AdversarialResumeServer
    let tls: TLSRelay
    let proxy: CampaignProxy
    let securityPolicy: SecurityPolicy
    let proxyRoute: NetworkRoute

    static let shared: CampaignServers = {
        do {
            return try CampaignServers()
        } catch {
            fatalError("the campaign's servers did not start: \(error)")
        }
    }()

    private init() throws {
        server = try AdversarialResumeServer.start()
        tls = try TLSRelay.start(forwardingTo: server.port)
        proxy = try CampaignProxy.start()
        securityPolicy = try SecurityPolicy(trustedCertificateAuthorities: [
            TLSCertificate(derEncoded: TestCertificates.shared.root.certificateDER),
        ])
        proxyRoute = NetworkRoute(proxy: .proxy(try Proxy(proxy.url)))
    }

    func url(_ scenario: CampaignScenario, path: String? = nil) -> URL {
        let path = path ?? AdversarialResumeServer.path(of: scenario.resource.key)
        if scenario.route == .http2ThroughNginx, let front = CampaignHTTP2Front.shared {
            return URL(string: "https://127.0.0.1:\(front.port)\(path)")!
        }
        return scenario.route.isTLS
            ? URL(string: "https://127.0.0.1:\(tls.port)\(path)")!
            : URL(string: "http://127.0.0.1:\(server.port)\(path)")!
    }

    func configure(_ operation: HTTPRequestOperation, for route: CampaignScenario.Route) {
        switch route {
        case .http, .https, .http2ThroughNginx: operation.configuration.route = NetworkRoute(proxy: .direct)
        case .httpThroughProxy, .httpsThroughConnect: operation.configuration.route = proxyRoute
        case .httpsThroughEnvironmentProxy, .httpDefaultRoute: operation.configuration.route = .default
        }
        if route.isTLS { operation.securityPolicy = securityPolicy }
    }
}

/// Fires once; waiting for it gives up after a timeout (a dispatch timer, no task left behind).
final class CampaignLatch: Sendable {
    private struct State {
        var fired = false
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    var hasFired: Bool { state.withLock { $0.fired } }

    /// True when it fired within `timeout`.
    func wait(timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = state.withLock { state -> Int? in
                guard !state.fired else { return nil }
                state.next += 1
                state.waiters[state.next] = continuation
                return state.next
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            let (seconds, attoseconds) = timeout.components
            let interval = Double(seconds) + Double(attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + interval) {
                let expired = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                expired?.resume(returning: false)
            }
        }
    }
}

/// Runs the watchers that tell when an operation is finished.
private let campaignWatchers: OperationQueue = {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 64
    return queue
}()

/// Starts the campaign's operations that have no manager.
let campaignQueue: OperationQueue = {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 256
    return queue
}()

/// True once `operation` is finished, within `timeout`.
func campaignWaitUntilFinished(_ operation: Operation, timeout: Duration) async -> Bool {
    let latch = CampaignLatch()
    let watcher = BlockOperation { latch.fire() }
    watcher.addDependency(operation)
    campaignWatchers.addOperation(watcher)
    return await latch.wait(timeout: timeout)
}

