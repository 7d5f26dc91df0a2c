@testable import HTTPOperations
import Foundation
import HTTPTestServer
import InMemoryTracing
import Synchronization
import Testing
import Tracing

extension AllTests {
    /// Operations share their manager's settings until one changes (issue 27, memory): a
    /// change to one operation, or to the manager, must never show in another.
    @Suite struct SharedSettings {
        /// Seeded scenarios of 40 steps (fewer under a sanitizer, where each step is slower).
        static let scenarios = underSanitizer ? 100 : 1_000

        /// A subclass whose `init` sets a field of its own, as users' subclasses do (the
        /// factory then sets more before the manager configures it).
        final class Preset: HTTPRequestOperation, @unchecked Sendable {
            // @unchecked Sendable: no state beyond the superclass's, which keeps it behind its lock.
            override init(request: URLRequest) {
                super.init(request: request)
                configuration.sensitiveHeaderFields = ["x-preset"]
            }
        }

        /// What one holder (the manager or an operation) should read.
        struct Expected: Equatable {
            var queue: Int?
            var timeout: Duration?
            var sensitive: Set<String>
            var user: String?
            var redirects: Int
        }

        static let queues = (0..<3).map { DispatchQueue(label: "shared-settings-\($0)") }
        static let credentials = ["ann", "bob"].map { URLCredential(user: $0, password: "pw", persistence: .none) }

        static func read(_ operation: HTTPRequestOperation) -> Expected {
            Expected(queue: operation.completionQueue.flatMap { queue in queues.firstIndex { $0 === queue } },
                     timeout: operation.configuration.totalTimeout, sensitive: operation.configuration.sensitiveHeaderFields,
                     user: operation.credential?.user, redirects: operation.maximumRedirects)
        }

        static func read(_ manager: HTTPRequestOperationManager) -> Expected {
            Expected(queue: manager.completionQueue.flatMap { queue in queues.firstIndex { $0 === queue } },
                     timeout: manager.defaultConfiguration.totalTimeout, sensitive: manager.defaultConfiguration.sensitiveHeaderFields,
                     user: manager.credential?.user, redirects: 16)
        }

        /// Over seeded scenarios, each step makes an operation (through the manager, through a
        /// factory whose subclass sets fields of its own first, or unconfigured), changes a
        /// setting of the manager, or changes one of an operation; after every step, the
        /// manager and every operation read what a model of separate copies says.
        @Test func aChangeShowsOnlyWhereItWasMade() {
            var random = SeededGenerator(for: "shared settings")
            let url = URL(string: "http://a.test/")!
            var differences: [String] = []
            for scenario in 0..<Self.scenarios {
                let manager = HTTPRequestOperationManager()
                var managerModel = Self.read(manager)
                var operations: [(HTTPRequestOperation, Expected)] = []
                for step in 0..<40 {
                    let queue = Int.random(in: 0..<4, using: &random)
                    let timeout: Duration? = Bool.random(using: &random) ? nil : .seconds(Int.random(in: 1...5, using: &random))
                    let sensitive = Set(["x-a", "x-b", "cookie"].filter { _ in Bool.random(using: &random) })
                    let user = Int.random(in: 0..<3, using: &random)
                    let redirects = Int.random(in: 0...20, using: &random)
                    var action = ""
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<3:
                        action = "made by the manager"
                        operations.append((manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil),
                                           Expected(queue: managerModel.queue, timeout: managerModel.timeout,
                                                    sensitive: managerModel.sensitive, user: managerModel.user, redirects: 16)))
                    case 3:
                        // Its queue and sensitive fields are the manager's to set; its redirects stay.
                        action = "made by a factory that presets"
                        manager.operationFactory = { request in
                            let operation = Preset(request: request)
                            operation.maximumRedirects = redirects
                            operation.completionQueue = Self.queues[0]
                            return operation
                        }
                        operations.append((manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil),
                                           Expected(queue: managerModel.queue, timeout: managerModel.timeout,
                                                    sensitive: managerModel.sensitive, user: managerModel.user,
                                                    redirects: redirects)))
                        manager.operationFactory = { HTTPRequestOperation(request: $0) }
                    case 4:
                        action = "made unconfigured"
                        operations.append((HTTPRequestOperation(request: URLRequest(url: url)),
                                           Expected(queue: nil, timeout: nil, sensitive: [], user: nil, redirects: 16)))
                    case 5..<7:
                        action = "manager changed"
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0:
                            manager.completionQueue = queue < 3 ? Self.queues[queue] : nil
                            managerModel.queue = queue < 3 ? queue : nil
                        case 1:
                            manager.defaultConfiguration.totalTimeout = timeout
                            managerModel.timeout = timeout
                        case 2:
                            manager.defaultConfiguration.sensitiveHeaderFields = sensitive
                            managerModel.sensitive = sensitive
                        default:
                            manager.credential = user < 2 ? Self.credentials[user] : nil
                            managerModel.user = user < 2 ? Self.credentials[user].user : nil
                        }
                    default:
                        guard !operations.isEmpty else { continue }
                        let index = Int.random(in: operations.indices, using: &random)
                        let operation = operations[index].0
                        action = "operation \(index) changed"
                        switch Int.random(in: 0..<5, using: &random) {
                        case 0:
                            operation.completionQueue = queue < 3 ? Self.queues[queue] : nil
                            operations[index].1.queue = queue < 3 ? queue : nil
                        case 1:
                            operation.configuration.totalTimeout = timeout
                            operations[index].1.timeout = timeout
                        case 2:
                            operation.configuration.sensitiveHeaderFields = sensitive
                            operations[index].1.sensitive = sensitive
                        case 3:
                            operation.credential = user < 2 ? Self.credentials[user] : nil
                            operations[index].1.user = user < 2 ? Self.credentials[user].user : nil
                        default:
                            operation.maximumRedirects = redirects
                            operations[index].1.redirects = redirects
                        }
                    }
                    if Self.read(manager) != managerModel {
                        differences.append("scenario \(scenario) step \(step) (\(action)): manager \(Self.read(manager)), not \(managerModel)")
                    }
                    for (index, (operation, expected)) in operations.enumerated() where Self.read(operation) != expected {
                        differences.append("scenario \(scenario) step \(step) (\(action)): operation \(index) "
                            + "\(Self.read(operation)), not \(expected)")
                    }
                }
            }
            #expect(differences.isEmpty, "seed \(random.seed), \(differences.count) differ; first: \(differences.prefix(2))")
        }

        /// Threads change operations that share one manager's settings, and the manager,
        /// all at once: each reads back only its own change (and the thread sanitizer run
        /// sees no write to settings another holder reads).
        @Test func changesFromManyThreadsStayApart() {
            let manager = HTTPRequestOperationManager()
            let url = URL(string: "http://a.test/")!
            let operations = (0..<64).map { _ in
                manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
            }
            let wrong = Atomic(0)
            DispatchQueue.concurrentPerform(iterations: 65) { index in
                for round in 1...50 {
                    if index == 64 {
                        manager.defaultConfiguration.totalTimeout = .seconds(1_000 + round)
                    } else {
                        operations[index].configuration.totalTimeout = .seconds(index * 100 + round)
                        if operations[index].configuration.totalTimeout != .seconds(index * 100 + round) { wrong.add(1, ordering: .relaxed) }
                    }
                }
            }
            #expect(wrong.load(ordering: .relaxed) == 0)
            #expect(manager.defaultConfiguration.totalTimeout == .seconds(1_050))
            for (index, operation) in operations.enumerated() { #expect(operation.configuration.totalTimeout == .seconds(index * 100 + 50)) }
        }

        /// A configured operation waiting its turn holds no settings and no transfer record
        /// of its own: it shares the manager's settings, and its record is made at start.
        @Test func aWaitingOperationHoldsNothingOfItsOwn() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            let operation = manager.httpRequestOperation(with: URLRequest(url: server.url(.echo)), success: nil, failure: nil)
            let (sharesManagers, hasRecord) = operation.state.withLock { state in
                (manager.settings.withLock { state.sharedSettings.isSame(as: $0.forOperations) }, state.recordStorage !== URLConnectionOperation.initialRecordStorage)
            }
            #expect(sharesManagers)
            #expect(!hasRecord)
            // On a suspended queue, where Foundation reads its readiness: still nothing.
            manager.operationQueue.isSuspended = true
            manager.enqueue(operation)
            #expect(operation.state.withLock { $0.recordStorage === URLConnectionOperation.initialRecordStorage })
            manager.operationQueue.isSuspended = false
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(operation.state.withLock { $0.recordStorage !== URLConnectionOperation.initialRecordStorage })
        }

        /// The manager's own blocks (a server-trust block) are not dropped from the settings
        /// it shares when an operation ends: that would copy them for every request.
        @Test func anOperationEndsStillSharingItsManagersBlocks() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            manager.setServerTrustEvaluationBlock { _, _ in true }
            let operation = manager.httpRequestOperation(with: URLRequest(url: server.url(.echo)), success: nil, failure: nil)
            manager.enqueue(operation)
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(operation.state.withLock { state in
                manager.settings.withLock { state.sharedSettings.isSame(as: $0.forOperations) }
            })
        }

        /// An operation made under a bound tracer keeps it, and still shares its manager's
        /// settings (the tracer and context live beside them); one with a block of its own
        /// drops it at the end.
        @Test func aTracedOperationSharesItsManagersSettingsToo() async throws {
            let manager = HTTPRequestOperationManager()
            let tracer = InMemoryTracer()
            let traced = withTracer(tracer) {
                manager.httpRequestOperation(with: URLRequest(url: URL(string: "http://a.test/")!), success: nil, failure: nil)
            }
            #expect(traced.tracer is InMemoryTracer)
            #expect(traced.state.withLock { state in
                manager.settings.withLock { state.sharedSettings.isSame(as: $0.forOperations) }
            })
            // The manager's tracer, once set (to nil too), is every operation's it configures.
            manager.tracer = nil
            let untraced = withTracer(tracer) {
                manager.httpRequestOperation(with: URLRequest(url: URL(string: "http://a.test/")!), success: nil, failure: nil)
            }
            #expect(untraced.tracer == nil)
        }

        /// Operations cancelled before they start, or refused, write a record of their own:
        /// the shared one every waiting operation reads stays as made.
        @Test func theSharedInitialRecordIsNeverWritten() async throws {
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            let cancelled = manager.httpRequestOperation(with: URLRequest(url: URL(string: "http://a.test/")!), success: nil, failure: nil)
            cancelled.cancel()
            manager.enqueue(cancelled)
            let refused = manager.httpRequestOperation(with: URLRequest(url: URL(string: "gopher://a.test/")!), success: nil, failure: nil)
            manager.enqueue(refused)
            try await waitUntilFinished(cancelled)
            try await waitUntilFinished(refused)
            #expect(cancelled.isCancelled && refused.error != nil)
            let initial = URLConnectionOperation.initialRecordStorage.value
            #expect(!initial.machine.isFinished && !initial.machine.isPaused)
            #expect(initial.timings == nil && initial.responseHead == nil && initial.resumeData == nil)
            #expect(initial.observation.metrics == nil && initial.observation.startedAt == nil && initial.observation.span == nil)
        }
    }
}
