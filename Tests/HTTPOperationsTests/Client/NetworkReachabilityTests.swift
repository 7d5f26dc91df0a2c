import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// Reachability over real links: a network namespace and a veth pair made by each test,
    /// whose ends it takes down and up. Skipped, with a message, where namespaces cannot be
    /// made (not root); CI runs as root, where they must run.
    @Suite(.enabled(if: NetworkNamespace.isAvailable || ExternalServers.required, "network namespaces need root"))
    struct NetworkReachability {
        /// Collects every status a manager delivers, to wait on and to count.
        final class Recorder: Sendable {
            let seen = Mutex<[NetworkReachabilityManager.Status]>([])
            let changed = TestSignal("a reachability change")

            init(_ manager: NetworkReachabilityManager) {
                manager.setReachabilityStatusChangeBlock { [self] status in
                    seen.withLock { $0.append(status) }
                    changed.fire()
                }
            }

            /// Waits until the last status delivered is `status`.
            func wait(for status: NetworkReachabilityManager.Status, timeout: Duration = .seconds(10)) async throws {
                let deadline = ContinuousClock.now + timeout
                while true {
                    // Counted before looking, so a change between the two is not missed.
                    let deliveries = changed.count
                    if seen.withLock({ $0.last }) == status { return }
                    guard ContinuousClock.now < deadline else {
                        throw TestTimeout("status \(status); saw \(seen.withLock { $0 })")
                    }
                    do {
                        try await changed.wait(times: deliveries + 1, timeout: deadline - ContinuousClock.now)
                    } catch is TestSignal.TimedOut {
                        throw TestTimeout("status \(status); saw \(seen.withLock { $0 })")
                    }
                }
            }
        }

        struct TestTimeout: Error, CustomStringConvertible {
            let description: String
            init(_ description: String) { self.description = description }
        }

        @Test func loopbackIsReachableViaLoopback() async throws {
            let manager = try NetworkReachabilityManager.forAddress("127.0.0.1")
            let recorder = Recorder(manager)
            manager.startMonitoring()
            defer { manager.stopMonitoring() }
            try await recorder.wait(for: .reachable(via: .loopback))
        }

        @Test func aDomainIsResolvedAndLookedUp() async throws {
            let manager = NetworkReachabilityManager.forDomain("localhost")
            let recorder = Recorder(manager)
            manager.startMonitoring()
            defer { manager.stopMonitoring() }
            try await recorder.wait(for: .reachable(via: .loopback))
            let nowhere = NetworkReachabilityManager.forDomain("nothing.invalid")
            let nowhereRecorder = Recorder(nowhere)
            nowhere.startMonitoring()
            defer { nowhere.stopMonitoring() }
            try await nowhereRecorder.wait(for: .notReachable)
        }

        @Test func anAddressWithNoRouteIsNotReachable() async throws {
            // TEST-NET-2, with a blackhole route of this test's own: no route leads there.
            NetworkNamespace.ip(["route", "add", "blackhole", "198.51.100.0/24"])
            defer { NetworkNamespace.ip(["route", "del", "blackhole", "198.51.100.0/24"]) }
            let manager = try NetworkReachabilityManager.forAddress("198.51.100.7")
            let recorder = Recorder(manager)
            manager.startMonitoring()
            defer { manager.stopMonitoring() }
            try await recorder.wait(for: .notReachable)
        }

        @Test func aLinkTakenDownAndUpFlipsTheStatusEachWayOnce() async throws {
            let space = try #require(NetworkNamespace.make(1), "the namespace and link could not be made")
            defer { space.remove() }
            let manager = try NetworkReachabilityManager.forAddress(space.innerAddress)
            let recorder = Recorder(manager)
            let notified = Mutex(0)
            let observer = NotificationCenter.default.addObserver(forName: NetworkReachabilityManager.didChangeNotification,
                                                                  object: manager, queue: nil) { _ in notified.withLock { $0 += 1 } }
            defer { NotificationCenter.default.removeObserver(observer) }
            manager.startMonitoring()
            defer { manager.stopMonitoring() }
            try await recorder.wait(for: .reachable(via: .wired))

            space.setHostSide(up: false)      // this side down: its route goes
            try await recorder.wait(for: .notReachable)
            space.setHostSide(up: true)
            try await recorder.wait(for: .reachable(via: .wired))
            space.setInnerSide(up: false)     // the far side down: the route stays, the carrier goes
            try await recorder.wait(for: .notReachable)
            space.setInnerSide(up: true)
            try await recorder.wait(for: .reachable(via: .wired))

            // Each change once: the kernel's bursts (a dozen messages per link change) were
            // coalesced, and no status repeats the one before it.
            try await Task.sleep(for: .milliseconds(300))
            let seen = recorder.seen.withLock { $0 }
            #expect(seen == [.reachable(via: .wired), .notReachable, .reachable(via: .wired), .notReachable, .reachable(via: .wired)],
                    "\(seen)")
            #expect(notified.withLock { $0 } == seen.count)
        }

        @Test func theStreamStartsWithTheCurrentStatus() async throws {
            let manager = try NetworkReachabilityManager.forAddress("127.0.0.1")
            let recorder = Recorder(manager)
            manager.startMonitoring()
            defer { manager.stopMonitoring() }
            try await recorder.wait(for: .reachable(via: .loopback))
            var iterator = manager.statuses.makeAsyncIterator()
            #expect(await iterator.next() == .reachable(via: .loopback))
        }

        @Test func aManagerHoldsItsQueueWhileItsHostIsUnreachable() async throws {
            let space = try #require(NetworkNamespace.make(2), "the namespace and link could not be made")
            defer { space.remove() }
            let server = space.command(["python3", "-m", "http.server", "--bind", space.innerAddress, "8080"])
            _ = try ManagedProcess.start(server.executable, server.arguments, port: 8080, host: space.innerAddress)
            let manager = HTTPRequestOperationManager(baseURL: URL(string: "http://\(space.innerAddress):8080/"))
            manager.responseSerializer = HTTPResponseSerializer()
            let recorder = Recorder(manager.reachabilityManager)
            manager.suspendsWhileUnreachable = true
            defer { manager.suspendsWhileUnreachable = false }
            try await recorder.wait(for: .reachable(via: .wired))
            #expect(!manager.operationQueue.isSuspended)

            space.setHostSide(up: false)
            try await recorder.wait(for: .notReachable)
            #expect(manager.operationQueue.isSuspended)
            let operation = manager.httpRequestOperation(with: URLRequest(url: URL(string: "http://\(space.innerAddress):8080/")!),
                                                         success: nil, failure: nil)
            manager.enqueue(operation)
            try await Task.sleep(for: .milliseconds(300))
            #expect(!operation.isExecuting && !operation.isFinished, "started while the host was unreachable")

            space.setHostSide(up: true)
            try await recorder.wait(for: .reachable(via: .wired))
            try await waitUntilFinished(operation, timeout: .seconds(15))
            #expect(operation.error == nil, "\(String(describing: operation.error))")
            #expect(operation.response?.statusCode == 200)
        }

        /// A download across the link, which the test cuts (this side down) once 512 KiB have
        /// arrived and restores 8 s later: the transfer times out, reconnecting fails while the
        /// link is down, and once it is back the download continues with `Range` from the
        /// bytes it held, byte-exact. nginx runs inside the namespace. (Cut for 3 s, the TCP
        /// connection outlived the cut: curl's idle check averages the rate over about five
        /// seconds, so a 2 s idle timeout did not fire, and no resume was needed.)
        @Test(.enabled(if: ExternalServers.nginxPath != nil || ExternalServers.required, "nginx is not installed"))
        func aDownloadAcrossACutLinkResumesByteExactWhenItReturns() async throws {
            let space = try #require(NetworkNamespace.make(3), "the namespace and link could not be made")
            defer { space.remove() }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-netns-nginx-\(getpid())").path
            try FileManager.default.createDirectory(atPath: folder + "/www", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: folder + "/logs", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: folder + "/tmp", withIntermediateDirectories: true)
            let size = 4 << 20
            let content = TestServer.pattern(count: size)
            try content.write(to: URL(fileURLWithPath: folder + "/www/big.bin"))
            let config = Nginx.configuration(prefix: folder, connections: 64, http: """
                access_log off;
                server {
                    listen \(space.innerAddress):8080;
                    root \(folder)/www;
                    location / { limit_rate 1m; }
                }
            """)
            try Data(config.utf8).write(to: URL(fileURLWithPath: folder + "/nginx.conf"))
            let nginx = space.command([ExternalServers.nginxPath ?? "/usr/sbin/nginx", "-c", folder + "/nginx.conf", "-p", folder])
            _ = try ManagedProcess.start(nginx.executable, nginx.arguments, port: 8080, host: space.innerAddress, removing: folder)

            let file = temporaryFile()
            defer { removeDownload(file) }
            let url = URL(string: "http://\(space.innerAddress):8080/big.bin")!
            let (operation, _) = HTTPRequestOperation.download(URLRequest(url: url, timeoutInterval: 2), to: file)
            operation.retryPolicy = RetryPolicy(maximumRetries: 12, initialDelay: 0.5, multiplier: 1.5, maximumDelay: 2,
                                                maximumTotalDelay: 30, retriesConnectionFailures: true)
            let halfMegabyte = TestSignal("512 KiB received")
            let signalled = Mutex(false)
            operation.setDownloadProgressBlock { _, total, _ in
                if total >= 512 << 10, signalled.withLock({ done in defer { done = true }; return !done }) { halfMegabyte.fire() }
            }
            OperationQueue().addOperation(operation)
            try await halfMegabyte.wait(timeout: .seconds(20))
            space.setHostSide(up: false)
            try await Task.sleep(for: .seconds(8))
            #expect(!operation.isFinished, "the download ended while the link was down: \(String(describing: operation.error))")
            space.setHostSide(up: true)
            try await waitUntilFinished(operation, timeout: .seconds(60))
            #expect(operation.error == nil, "\(String(describing: operation.error))")
            #expect(try Data(contentsOf: file) == content, "the file is not the server's bytes")
            let metrics = operation.downloadMetrics
            #expect(metrics.automaticResumes >= 1 && (metrics.firstResumeOffset ?? 0) >= 512 << 10, "\(metrics)")
            print("cut link: resumed from byte \(metrics.firstResumeOffset ?? -1), \(metrics.automaticResumes) automatic resume(s)")
        }

        @Test func addressesMustBeAddresses() {
            #expect(throws: URLError.self) { try NetworkReachabilityManager.forAddress("example.com") }
            #expect(NetworkReachabilityManager.forDomain("::1").target == .address(family: AF_INET6, bytes: Array(repeating: 0, count: 15) + [1]))
        }
    }
}
