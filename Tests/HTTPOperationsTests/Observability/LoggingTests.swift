import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Logging
import Synchronization
import Testing

/// What the library logs through the logger it is given, and what it never logs.
extension AllTests {
    @Suite struct LoggingTests {
        /// Keeps every record; a test reads them back.
        final class Recorder: Sendable {
            struct Record: Sendable {
                let level: Logger.Level
                let message: String
                let metadata: [String: String]
            }

            let records = Mutex<[Record]>([])

            func logger(level: Logger.Level = .trace) -> Logger {
                var logger = Logger(label: "test") { _ in
                    ClosureLogHandler { level, message, metadata in
                        self.records.withLock {
                            $0.append(Record(level: level, message: message, metadata: metadata.mapValues { "\($0)" }))
                        }
                    }
                }
                logger.logLevel = level
                return logger
            }
        }

        @Test func aManagersOperationsLogStartAndOutcomeWithRedactedURLsAtDebugOnly() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let recorder = Recorder()
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            manager.defaultConfiguration.logger = recorder.logger()
            var components = URLComponents(url: server.url(.bytes(1234)), resolvingAgainstBaseURL: false)!
            components.user = "alice"
            components.password = "hunter2"
            components.queryItems = [URLQueryItem(name: "api_key", value: "k-123"), URLQueryItem(name: "page", value: "2")]
            let op = manager.httpRequestOperation(with: URLRequest(url: components.url!), success: nil, failure: nil)
            let (finishedSignal, observer) = notificationSignal(.networkingOperationDidFinish, of: op)
            defer { NotificationCenter.default.removeObserver(observer) }
            #expect(try await run(op).error == nil)
            // The outcome is logged on the callback queue, after the blocks, before the notification.
            try await finishedSignal.wait()
            let records = recorder.records.withLock { $0 }
            let messages = records.map(\.message)
            #expect(messages.contains("request started") && messages.contains("request finished"), "\(messages)")
            #expect(records.allSatisfy { $0.level <= .debug }, "nothing above debug")
            for record in records {
                #expect(record.metadata[RequestLogging.requestIDKey] == op.requestID)
                let url = record.metadata[RequestLogging.urlKey] ?? ""
                #expect(!url.contains("hunter2") && !url.contains("alice") && !url.contains("k-123"), "\(url)")
                #expect(record.metadata.keys.allSatisfy { $0.hasPrefix("httpop.") }, "\(record.metadata.keys)")
            }
            let finished = try #require(records.first { $0.message == "request finished" })
            #expect(finished.metadata[RequestLogging.statusKey] == "200")
            #expect(finished.metadata[RequestLogging.bytesKey] == "1234")
            #expect(finished.metadata[RequestLogging.urlKey]?.contains("page=2") == true)
            #expect(finished.metadata[RequestLogging.durationKey] != nil && finished.metadata[RequestLogging.transfersKey] == "1")
            #expect(records.contains { $0.level == .trace && $0.message == "timings" })
        }

        @Test func aFailureIsLoggedAtDebugWithItsErrorAndRetries() async throws {
            let recorder = Recorder()
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
            op.configuration.logger = recorder.logger(level: .debug)
            var policy = RetryPolicy.transientFailures
            policy.initialDelay = 0.01
            op.retryPolicy = policy
            let (finishedSignal, observer) = notificationSignal(.networkingOperationDidFinish, of: op)
            defer { NotificationCenter.default.removeObserver(observer) }
            #expect(try await run(op).urlErrorCode == .cannotConnectToHost)
            try await finishedSignal.wait()
            let records = recorder.records.withLock { $0 }
            #expect(records.filter { $0.message == "retry" }.count == 3, "\(records.map(\.message))")
            let finished = try #require(records.first { $0.message == "request finished" })
            #expect(finished.metadata[RequestLogging.retriesKey] == "3")
            #expect(finished.metadata[RequestLogging.errorKey] != nil)
            #expect(records.allSatisfy { $0.level <= .debug })
            #expect(!records.contains { $0.level == .trace }, "a debug logger gets no trace")
        }

        @Test func anOperationIsSilentUnlessGivenALogger() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(10))))
            #expect(op.configuration.logger.logLevel > .debug)
            #expect(try await run(op).error == nil)
        }

        @Test func requestIDsAreUniqueAndURLsAreRedacted() {
            let ids = (0..<1000).map { _ in RequestLogging.nextRequestID() }
            #expect(Set(ids).count == 1000)
            let url = URL(string: "https://bob:secret@api.example/v1?session_token=t&x-api-key=k&code=c&q=swift")!
            let redacted = RequestLogging.redacted(url)
            #expect(redacted == "https://api.example/v1?session_token=redacted&x-api-key=redacted&code=redacted&q=swift", "\(redacted)")
        }
    }
}
