@testable import HTTPOperations
import Foundation
import HTTPTestServer
import HTTPTestTLSServer
import Logging
import Synchronization
import Testing

extension AllTests {
    /// ``OperationConfiguration``: one value a manager gives its operations whole, that an
    /// operation may change for itself before it starts, and that refuses a change after.
    @Suite struct OperationConfigurations {
        @Test func theManagersConfigurationIsWhatItsOperationsStartWith() {
            let manager = HTTPRequestOperationManager()
            let queue = DispatchQueue(label: "configured-callbacks")
            let store = CookieStore()
            var configuration = OperationConfiguration()
            configuration.completionQueue = queue
            configuration.totalTimeout = .seconds(7)
            configuration.sensitiveHeaderFields = ["X-Api-Key"]
            configuration.allowedSchemes = ["HTTPS", "file"]
            configuration.route.unixSocketPath = "/run/api.sock"
            configuration.cookieStore = store
            configuration.logger = Logger(label: "configured")
            manager.defaultConfiguration = configuration
            let url = URL(string: "http://127.0.0.1:9/")!
            let plain = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
            // A factory whose operation set fields before the manager configured it: the
            // configuration is the manager's, what is the request's own stays.
            manager.operationFactory = { request in
                let operation = HTTPRequestOperation(request: request)
                operation.maximumRedirects = 3
                operation.configuration.totalTimeout = .seconds(1)
                return operation
            }
            let preset = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
            for (name, operation) in [("plain", plain), ("preset", preset)] {
                let got = operation.configuration
                #expect(got.completionQueue === queue, "\(name)")
                #expect(got.totalTimeout == .seconds(7), "\(name)")
                #expect(got.sensitiveHeaderFields == ["x-api-key"], "\(name)")
                #expect(got.allowedSchemes == ["https", "file"], "\(name)")
                #expect(got.route.unixSocketPath == "/run/api.sock", "\(name)")
                #expect(got.cookieStore === store, "\(name)")
                #expect(got.logger.label == "configured", "\(name)")
            }
            #expect(plain.maximumRedirects == 16)
            #expect(preset.maximumRedirects == 3, "the operation's own setting was overwritten")
            // One operation's change reaches neither the manager nor another operation.
            plain.configuration.totalTimeout = nil
            #expect(preset.configuration.totalTimeout == .seconds(7))
            #expect(manager.defaultConfiguration.totalTimeout == .seconds(7))
            // A manager's change reaches the operations made afterwards only.
            manager.defaultConfiguration.totalTimeout = .seconds(9)
            #expect(preset.configuration.totalTimeout == .seconds(7))
            let later = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
            #expect(later.configuration.totalTimeout == .seconds(9))
        }

        /// A change after the transfer read its settings would never reach it: it is dropped and
        /// said, while the transfer runs and after it finished, and the operation finishes.
        @Test func aChangeAfterStartIsRefusedAndSaid() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let warnings = Mutex<[String]>([])
            let operation = HTTPRequestOperation(request: URLRequest(url: server.url(.delay(milliseconds: 400))))
            operation.responseSerializer = HTTPResponseSerializer()
            operation.configuration.logger = Logger(label: "late") { _ in
                ClosureLogHandler { level, _, metadata in
                    if level == .warning, let setting = metadata["httpop.setting"] {
                        warnings.withLock { $0.append("\(setting)") }
                    }
                }
            }
            operation.configuration.totalTimeout = .seconds(30)
            // Debug builds assert on a late change (it is a bug in the caller); this test
            // shows what release builds do, so it turns the assertion off while it runs.
            URLConnectionOperation.lateChangesAssert.store(false, ordering: .relaxed)
            defer { URLConnectionOperation.lateChangesAssert.store(true, ordering: .relaxed) }
            let recorder = OutcomeRecorder()
            recorder.watch(operation)
            operation.start()  // on no queue: once it returns, the operation has started
            operation.configuration.totalTimeout = .milliseconds(1)
            operation.maximumRedirects = 0
            operation.setDownloadProgressBlock { _, _, _ in }
            operation.setInformationalResponseBlock { _, _ in }
            #expect(operation.configuration.totalTimeout == .seconds(30))
            #expect(operation.maximumRedirects == 16)
            try await recorder.done.wait(timeout: .seconds(20))
            let outcome = try #require(recorder.outcome(of: operation))
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            operation.destinationURL = URL(fileURLWithPath: "/tmp/never-written")
            #expect(operation.destinationURL == nil)
            #expect(warnings.withLock { $0 } == ["configuration", "maximumRedirects", "downloadProgressBlock",
                                                   "informationalResponseBlock", "destinationURL"])
        }

        /// `prepareRequest()` runs in `start()` before the transfer reads its settings: a
        /// subclass may still configure itself there, as it could before the gate.
        @Test func aSubclassMayConfigureItselfInPrepareRequest() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let operation = SelfConfiguring(request: URLRequest(url: server.url(.basicAuth(user: "u", password: "p"))))
            operation.responseSerializer = HTTPResponseSerializer()
            let outcome = try await run(operation)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(operation.response?.statusCode == 200)
        }

        /// Sets its credential when it is about to be sent.
        final class SelfConfiguring: HTTPRequestOperation, @unchecked Sendable {
            // @unchecked Sendable: no state beyond the superclass's, which keeps it behind its lock.
            override func prepareRequest() throws -> URLRequest? {
                configuration.credential = URLCredential(user: "u", password: "p", persistence: .none)
                return nil
            }
        }

        /// The server-trust block is set with `setServerTrustEvaluationBlock`, not carried by the
        /// value: assigning a configuration, to a manager or to an operation, keeps it.
        @Test func assigningAConfigurationKeepsTheServerTrustBlock() async throws {
            let server = try TLSTestServer.start(.selfSigned)
            defer { server.shutdown() }
            var configuration = OperationConfiguration()
            configuration.securityPolicies.fallback = try SecurityPolicy(allowInvalidCertificates: true, validatesDomainName: false)
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            manager.setServerTrustEvaluationBlock { _, _ in false }
            manager.defaultConfiguration = configuration
            let made = manager.httpRequestOperation(with: URLRequest(url: server.http.url(.bytes(10))), success: nil, failure: nil)
            let own = HTTPRequestOperation(request: URLRequest(url: server.http.url(.bytes(10))))
            own.responseSerializer = HTTPResponseSerializer()
            own.setServerTrustEvaluationBlock { _, _ in false }
            own.configuration = configuration
            for (name, operation) in [("made by the manager", made), ("its own", own)] {
                let outcome = try await run(operation)
                #expect((outcome.error as? SecurityError)?.reason == .serverTrustRefused(host: "127.0.0.1"),
                        "\(name): \(String(describing: outcome.error))")
            }
            #expect(server.http.receivedRequests.isEmpty)
        }

        /// A manager's credential is for its base URL's origin while it has one; taken away, it
        /// takes that origin with it, and a manager without a base URL lets each request's
        /// credential go to the request's own origin, whatever configuration it was given.
        @Test func aCredentialsOriginIsTheManagersOwn() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let credential = URLCredential(user: "u", password: "p", persistence: .none)
            let elsewhere = URLRequest(url: server.url(.basicAuth(user: "u", password: "p"), host: "localhost"))
            let based = HTTPRequestOperationManager(baseURL: server.baseURL)
            based.responseSerializer = HTTPResponseSerializer()
            based.credential = credential
            let pinned = based.defaultConfiguration
            based.credential = nil
            let own = based.httpRequestOperation(with: elsewhere, success: nil, failure: nil)
            own.credential = credential
            let unbased = HTTPRequestOperationManager()
            unbased.responseSerializer = HTTPResponseSerializer()
            unbased.defaultConfiguration = pinned
            let given = unbased.httpRequestOperation(with: elsewhere, success: nil, failure: nil)
            for (name, operation) in [("own credential after the manager's went", own), ("a configuration from a based manager", given)] {
                let outcome = try await run(operation)
                #expect(operation.response?.statusCode == 200, "\(name): \(String(describing: outcome.error))")
            }
        }

        /// A GET from an operation nobody configured, or from a manager with its defaults, is a
        /// plain transfer (its easy handle is reused without a reset): the default schemes
        /// reach the transfer as "the defaults", not as a set of its own.
        @Test func aDefaultGETIsAPlainTransfer() throws {
            let request = URLRequest(url: URL(string: "http://127.0.0.1:9/")!)
            let manager = HTTPRequestOperationManager()
            let allowing = HTTPRequestOperation(request: request)
            allowing.configuration.allowedSchemes.insert("file")
            let cases = [("unconfigured", HTTPRequestOperation(request: request), true),
                         ("made by a manager", manager.httpRequestOperation(with: request, success: nil, failure: nil), true),
                         ("allowing file:", allowing, false)]
            for (name, operation, plain) in cases {
                let settings = operation.state.withLock { $0.settings }
                let transfer = try TransferInputs(settings, request: request).transferRequest(for: request)
                #expect(transfer.isPlain == plain, "\(name)")
            }
        }
    }
}
