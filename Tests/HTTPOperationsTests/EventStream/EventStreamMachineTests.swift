import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import HTTPOperations
import Testing

extension AllTests {
    /// Every decision of an event stream, without I/O: which answers are read, which
    /// reconnected, which end it; how long it waits; what a pause, a resume or a cancel does
    /// in each phase.
    @Suite struct EventStreamDecisions {
        typealias Machine = EventStreamMachine

        static func configuration(_ change: (inout EventStreamConfiguration) -> Void = { _ in }) -> EventStreamConfiguration {
            var configuration = EventStreamConfiguration()
            configuration.reconnectionDelay = .seconds(1)
            configuration.maximumReconnectionDelay = .seconds(10)
            configuration.jitter = 0.5
            configuration.maximumConsecutiveFailures = 4
            change(&configuration)
            return configuration
        }

        /// A machine that has connected and is reading.
        static func reading(_ configuration: EventStreamConfiguration = configuration()) -> Machine {
            var machine = Machine(configuration: configuration)
            guard case .connect = machine.start(), case .read = machine.answered(status: 200, mediaType: "text/event-stream") else {
                Issue.record("did not reach reading")
                return machine
            }
            return machine
        }

        static func waitDuration(_ action: Machine.Action) -> Duration? {
            if case .wait(let duration) = action { return duration }
            return nil
        }

        @Test func onlyA200EventStreamIsRead() {
            let refusals: [(Int, String?)] = [(200, "application/json"), (200, nil), (404, "text/event-stream"), (500, "text/html"), (206, "text/event-stream"), (301, nil)]
            for (status, type) in refusals {
                var machine = Machine(configuration: Self.configuration())
                _ = machine.start()
                guard case .refuse(let reasons) = machine.answered(status: status, mediaType: type) else {
                    Issue.record("\(status) \(type ?? "-") was not refused")
                    continue
                }
                #expect(reasons.first?.code == (status == 200 ? .unacceptableContentType : .unacceptableStatusCode))
                #expect(machine.phase == .finished)
            }
        }

        @Test func a204StopsTheStreamWithoutAnError() {
            var machine = Machine(configuration: Self.configuration())
            _ = machine.start()
            guard case .stop(.finish(.stoppedByServer)) = machine.answered(status: 204, mediaType: nil) else {
                Issue.record("204 did not stop the stream")
                return
            }
            #expect(machine.phase == .finished)
        }

        @Test(arguments: [429, 502, 503, 504])
        func aGatewaysAnswerIsReconnectedAfter(_ status: Int) {
            var machine = Machine(configuration: Self.configuration())
            _ = machine.start()
            guard case .reconnect(let reasons) = machine.answered(status: status, mediaType: "text/html") else {
                Issue.record("\(status) was not reconnected after")
                return
            }
            let error = ResponseValidationError(reasons: reasons, response: HTTPURLResponse(url: URL(string: "http://feed.test/")!, statusCode: status, httpVersion: nil, headerFields: nil)!, data: nil)
            let step1 = machine.connectionEnded(error: error, jitter: 0)
            #expect(Self.waitDuration(step1) == .seconds(1))
        }

        @Test func theDelayIsTheServersRetryDoubledPerFailureCappedAndJittered() {
            var machine = Self.reading(Self.configuration { $0.maximumConsecutiveFailures = nil })
            machine.retryReceived(milliseconds: 1500)
            machine.bodyReceived()
            // A connection that delivered: no backoff, jitter within [delay, 1.5 × delay].
            let step2 = machine.connectionEnded(error: nil, jitter: 0)
            #expect(Self.waitDuration(step2) == .milliseconds(1500))
            var expected = [Duration.milliseconds(1500), .seconds(3), .seconds(6), .seconds(10), .seconds(10)]
            // Connections in a row with no event: 1.5, 3, 6, then the cap.
            for failure in 1...5 {
                let step3 = machine.waited()
                #expect(step3 == .connect)
                let step4 = machine.answered(status: 200, mediaType: "text/event-stream")
                #expect(step4 == .read)
                let wait = Self.waitDuration(machine.connectionEnded(error: URLError(.networkConnectionLost), jitter: 1))
                let base = expected.removeFirst()
                #expect(wait == min(base * 1.5, .seconds(10)), "failure \(failure)")
            }
            // An event resets the backoff.
            _ = machine.waited()
            _ = machine.answered(status: 200, mediaType: "text/event-stream")
            machine.bodyReceived()
            let step5 = machine.connectionEnded(error: nil, jitter: 0.5)
            #expect(Self.waitDuration(step5) == .milliseconds(1875))
        }

        /// A server's `retry: 0` (or 10) is the wait after a connection that ended; it must not
        /// make connections that fail in a row a tight loop against a server that is down:
        /// from the second failure in a row they back off from at least `reconnectionDelay`
        /// (every wait was zero, and the default 10 failures were spent in milliseconds).
        @Test(arguments: [0, 10])
        func aSmallServerRetryStillBacksOffWhenConnectionsFailInARow(retry: Int) {
            var machine = Self.reading(Self.configuration { $0.maximumConsecutiveFailures = nil })
            machine.retryReceived(milliseconds: retry)
            machine.bodyReceived()
            // After a connection that delivered, the server's wish holds.
            #expect(Self.waitDuration(machine.connectionEnded(error: nil, jitter: 0)) == .milliseconds(retry))
            // Then connections that fail in a row: the first waits what the server asked, the
            // next ones back off from the configured second (doubling, to the 10 s cap).
            var waits: [Duration] = []
            for _ in 1...5 {
                _ = machine.waited()
                waits.append(Self.waitDuration(machine.connectionEnded(error: URLError(.cannotConnectToHost), jitter: 0)) ?? .zero)
            }
            #expect(waits == [.milliseconds(retry), .seconds(2), .seconds(4), .seconds(8), .seconds(10)])
        }

        @Test func aRetryAboveTheCapWaitsTheCap() {
            var machine = Self.reading()
            machine.retryReceived(milliseconds: 3_600_000)
            machine.bodyReceived()
            let step6 = machine.connectionEnded(error: nil, jitter: 0.9)
            #expect(Self.waitDuration(step6) == .seconds(10))
        }

        @Test func failuresInARowExhaustTheStreamWithTheLastError() {
            var machine = Self.reading()
            for _ in 1..<4 {
                let step7 = machine.connectionEnded(error: URLError(.cannotConnectToHost), jitter: 0)
                #expect(Self.waitDuration(step7) != nil)
                _ = machine.waited()
                _ = machine.answered(status: 200, mediaType: "text/event-stream")
            }
            guard case .finish(.failed(let error as EventStreamError)) = machine.connectionEnded(error: URLError(.timedOut), jitter: 0) else {
                Issue.record("the fourth failure in a row did not end the stream")
                return
            }
            #expect(error.reason == .reconnectsExhausted(attempts: 4))
            #expect((error.underlyingError as? URLError)?.code == .timedOut)
        }

        @Test func whatAReconnectionCannotCureEndsTheStream() {
            let fatal: [any Error] = [
                URLError(.serverCertificateUntrusted), URLError(.secureConnectionFailed), URLError(.cancelled),
                URLError(.unsupportedURL), EventStreamError(reason: .eventTooLarge(limit: 1)), CancellationError(),
                SecurityError(.pinMismatch(host: "feed.test", mode: .publicKey, expected: ["a"], received: ["b"])),
            ]
            for error in fatal {
                var machine = Self.reading()
                guard case .finish(.failed) = machine.connectionEnded(error: error, jitter: 0) else {
                    Issue.record("\(error) was reconnected after")
                    continue
                }
            }
            for code in [URLError.Code.networkConnectionLost, .timedOut, .cannotConnectToHost, .badServerResponse] {
                var machine = Self.reading()
                let step8 = machine.connectionEnded(error: URLError(code), jitter: 0)
                #expect(Self.waitDuration(step8) != nil, "\(code)")
            }
        }

        @Test func aStreamWhoseRequestIsNotIdempotentNeverReconnects() {
            for method in ["POST", "PATCH", "post"] {
                var machine = Machine(configuration: Self.configuration(), method: method)
                _ = machine.start()
                let answer = machine.answered(status: 503, mediaType: "text/plain")
                guard case .refuse = answer else {
                    Issue.record("\(method): a 503 was reconnected after")
                    continue
                }
                var ended = Machine(configuration: Self.configuration(), method: method)
                _ = ended.start()
                _ = ended.answered(status: 200, mediaType: "text/event-stream")
                let paused = ended.pause()
                #expect(!paused, "\(method): paused")
                guard case .finish(.stoppedByServer) = ended.connectionEnded(error: nil, jitter: 0) else {
                    Issue.record("\(method): a clean end did not end the stream")
                    continue
                }
                var dropped = Machine(configuration: Self.configuration(), method: method)
                _ = dropped.start()
                _ = dropped.answered(status: 200, mediaType: "text/event-stream")
                guard case .finish(.failed) = dropped.connectionEnded(error: URLError(.networkConnectionLost), jitter: 0) else {
                    Issue.record("\(method): a drop was reconnected after")
                    continue
                }
            }
            var allowed = Machine(configuration: Self.configuration { $0.reconnectsNonIdempotentRequests = true }, method: "POST")
            _ = allowed.start()
            _ = allowed.answered(status: 200, mediaType: "text/event-stream")
            #expect(Self.waitDuration(allowed.connectionEnded(error: nil, jitter: 0)) != nil)
        }

        @Test func pauseClosesResumeReconnectsAtOnceCancelEnds() {
            var machine = Self.reading()
            let step9 = machine.pause()
            #expect(step9)
            let step10 = machine.pause()
            #expect(!step10)
            // The connection the pause closed ends: the stream waits for a resume, and no
            // failure is counted.
            let step11 = machine.connectionEnded(error: URLError(.cancelled), jitter: 0)
            #expect(step11 == .awaitResume)
            #expect(machine.consecutiveFailures == 0)
            let step12 = machine.waited()
            #expect(step12 == .awaitResume)
            let step13 = machine.resume()
            #expect(step13)
            let step14 = machine.resume()
            #expect(!step14)
            let step15 = machine.waited()
            #expect(step15 == .connect)
            let step16 = machine.cancel()
            #expect(step16)
            guard case .stop(.finish(.cancelled)) = machine.answered(status: 200, mediaType: "text/event-stream") else {
                Issue.record("an answer after a cancel was read")
                return
            }
            let step17 = machine.cancel()
            #expect(!step17)
        }

        @Test func aCancelInEveryPhaseEndsTheStreamOnce() {
            var ready = Machine(configuration: Self.configuration())
            let step18 = ready.cancel()
            #expect(!step18)
            guard case .finish(.cancelled) = ready.start() else { Issue.record("a cancelled stream started"); return }

            var waiting = Self.reading()
            _ = waiting.connectionEnded(error: nil, jitter: 0)
            let step19 = waiting.cancel()
            #expect(step19)
            guard case .finish(.cancelled) = waiting.waited() else { Issue.record("a cancelled wait reconnected"); return }

            var paused = Self.reading()
            _ = paused.pause()
            let step20 = paused.cancel()
            #expect(step20)
            guard case .finish(.cancelled) = paused.connectionEnded(error: URLError(.cancelled), jitter: 0) else {
                Issue.record("a cancelled pause did not end")
                return
            }
            #expect(paused.isStopping)
        }
    }
}

extension EventStreamMachine.Action: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.connect, .connect), (.awaitResume, .awaitResume): true
        case (.wait(let a), .wait(let b)): a == b
        case (.finish(let a), .finish(let b)): a.kind == b.kind
        default: false
        }
    }
}

extension EventStreamMachine.End {
    /// The case, without its error, for comparisons.
    var kind: String {
        switch self {
        case .stoppedByServer: "stoppedByServer"
        case .cancelled: "cancelled"
        case .failed(let error): "failed(\(type(of: error)))"
        }
    }
}

extension EventStreamMachine.Answer: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.read, .read): true
        case (.reconnect(let a), .reconnect(let b)), (.refuse(let a), .refuse(let b)): a == b
        case (.stop(let a), .stop(let b)): a == b
        default: false
        }
    }
}
