import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

/// Sending again by itself: transient statuses (with `Retry-After`), connections never made,
/// backoff with jitter, caps — and never a non-idempotent request unless asked.
extension AllTests {
    @Suite struct RetryPolicyTests {
        typealias Machine = TransferStateMachine

        static func machine(_ policy: RetryPolicy, idempotent: Bool = true) -> Machine {
            var configuration = Machine.Configuration()
            configuration.retryPolicy = policy
            configuration.isIdempotent = idempotent
            var machine = Machine(configuration: configuration)
            machine.random = { 0.5 }    // no jitter: the middle of the range
            _ = machine.begin(held: 0)
            return machine
        }

        static func head(_ status: Int, _ fields: (String, String)...) -> ResponseHead {
            ResponseHead(statusCode: status, httpVersion: "HTTP/1.1", fields: fields.map { (name: $0.0, value: $0.1) })
        }

        // MARK: - The machine

        @Test func a503IsHeldAsideAndSentAgainAfterItsRetryAfter() {
            var machine = Self.machine(.transientFailures)
            #expect(machine.headReceived(Self.head(503, ("Retry-After", "2"))) == .holdAside)
            #expect(machine.bodyReceived(count: 100, admission: { .accepted }) == .divert)
            #expect(machine.transferCompleted(error: nil) == .scheduleRetry(after: 2))
            #expect(machine.retryTimerFired() == .init(rangeFrom: nil, validator: nil, reason: .retry))
            #expect(machine.metrics.resumes == 0, "nothing was held: not a resume")
            #expect(machine.headReceived(Self.head(200)) == .deliver(restartFromZero: false, newIdentity: true))
            #expect(machine.transferCompleted(error: nil) == .report(.success))
        }

        @Test func backoffGrowsWithJitterWithinItsBounds() {
            let policy = RetryPolicy.transientFailures
            #expect(policy.delay(beforeRetry: 1) == 0.5 && policy.delay(beforeRetry: 2) == 1 && policy.delay(beforeRetry: 3) == 2)
            #expect(policy.jittered(1, random: 0) == 0.8 && policy.jittered(1, random: 1) == 1.2 && policy.jittered(1, random: 0.5) == 1)
            var machine = Self.machine(policy)
            machine.random = { 1 }
            _ = machine.headReceived(Self.head(503))
            #expect(machine.transferCompleted(error: nil) == .scheduleRetry(after: 0.6))
        }

        @Test func aRetryAfterLongerThanThePolicyAllowsMakesTheAnswerTheOutcome() {
            var machine = Self.machine(.transientFailures)
            _ = machine.headReceived(Self.head(503, ("Retry-After", "3600")))
            #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))
        }

        @Test func retriesStopAtTheirCountAndTheirTotalWait() {
            var machine = Self.machine(.transientFailures)
            for _ in 0..<3 {
                _ = machine.headReceived(Self.head(503))
                guard case .scheduleRetry = machine.transferCompleted(error: nil) else { Issue.record("no retry"); return }
                _ = machine.retryTimerFired()
            }
            // The fourth 503 is not held for a retry: it is the answer.
            #expect(machine.headReceived(Self.head(503)) == .holdAside)
            #expect(machine.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))

            var capped = RetryPolicy.transientFailures
            capped.maximumTotalDelay = 1
            var short = Self.machine(capped)
            _ = short.headReceived(Self.head(503, ("Retry-After", "1")))
            #expect(short.transferCompleted(error: nil) == .scheduleRetry(after: 1))
            _ = short.retryTimerFired()
            _ = short.headReceived(Self.head(503, ("Retry-After", "1")))
            #expect(short.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))
        }

        @Test func aNonIdempotentRequestIsNeverSentAgainUnlessAsked() {
            var post = Self.machine(.transientFailures, idempotent: false)
            // Held aside as the error answer it is, and reported: not sent again.
            _ = post.headReceived(Self.head(503))
            #expect(post.transferCompleted(error: nil) == .report(.responseHeldAside(intoSink: true)))
            var refused = Self.machine(.transientFailures, idempotent: false)
            #expect(refused.transferCompleted(error: URLError(.cannotConnectToHost)) == .report(.failure(.transport(URLError(.cannotConnectToHost)))))

            var optedIn = RetryPolicy.transientFailures
            optedIn.retriesNonIdempotentRequests = true
            var keyed = Self.machine(optedIn, idempotent: false)
            #expect(keyed.headReceived(Self.head(503)) == .holdAside)
        }

        @Test func aConnectionNeverMadeIsRetriedOnlyWhenThePolicySays() {
            var plain = Self.machine(.default)
            #expect(plain.transferCompleted(error: URLError(.cannotFindHost)) == .report(.failure(.transport(URLError(.cannotFindHost)))))
            var transient = Self.machine(.transientFailures)
            #expect(transient.transferCompleted(error: URLError(.cannotFindHost)) == .scheduleRetry(after: 0.5))
        }

        @Test func retryAfterReadsSecondsAndDates() {
            let now = Date(timeIntervalSince1970: 1_000_000_000)
            #expect(RetryPolicy.retryAfter("120", now: now) == 120)
            #expect(RetryPolicy.retryAfter("Sun, 09 Sep 2001 01:47:40 GMT", now: now) == 60)
            #expect(RetryPolicy.retryAfter("soon", now: now) == nil)
            #expect(RetryPolicy.retryAfter("-5", now: now) == nil)
        }

        // MARK: - Over the wire

        @Test func aGetMeetsTwo503sAndSucceedsWithTheBodyOfTheThirdAnswerOnly() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let key = "flaky-\(UUID().uuidString)"
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.flaky(key: key, failures: 2, status: 503, retryAfter: "0",
                                                                                      count: 5_000))))
            var policy = RetryPolicy.transientFailures
            policy.initialDelay = 0.01
            op.retryPolicy = policy
            let outcome = try await run(op)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(outcome.data == TestServer.pattern(count: 5_000))
            #expect(server.requestCount(forResumableKey: key) == 3)
            #expect(op.timings?.transfers == 3)
        }

        @Test func aRetryAfterIsWaitedFor() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let key = "flaky-\(UUID().uuidString)"
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.flaky(key: key, failures: 1, status: 429, retryAfter: "1",
                                                                                      count: 10))))
            op.retryPolicy = .transientFailures
            let started = ContinuousClock.now
            #expect(try await run(op).error == nil)
            // A lower bound only: the wait asked for was kept.
            #expect(ContinuousClock.now - started >= .seconds(1))
            #expect(server.requestCount(forResumableKey: key) == 2)
        }

        @Test func aPostMeetsA503AndIsNotSentAgain() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let key = "flaky-\(UUID().uuidString)"
            var request = URLRequest(url: server.url(.flaky(key: key, failures: 1, status: 503, retryAfter: nil, count: 10)))
            request.httpMethod = "POST"
            request.httpBody = Data("order=1".utf8)
            let op = HTTPRequestOperation(request: request)
            op.retryPolicy = .transientFailures
            let outcome = try await run(op)
            #expect((outcome.error as? ResponseValidationError) != nil, "\(String(describing: outcome.error))")
            #expect(op.response?.statusCode == 503)
            #expect(server.requestCount(forResumableKey: key) == 1)
        }

        @Test func aRefusedConnectionIsTriedAgainThenReported() async throws {
            var policy = RetryPolicy.transientFailures
            policy.initialDelay = 0.01
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
            op.retryPolicy = policy
            #expect(try await run(op).urlErrorCode == .cannotConnectToHost)
            #expect(op.timings?.transfers == 4)
        }
    }
}
