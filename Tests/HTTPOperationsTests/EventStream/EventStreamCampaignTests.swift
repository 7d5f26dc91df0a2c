import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// The event stream's promise over random feeds: whatever the server's cuts (mid-line,
    /// mid-character, mid-CRLF, inside the BOM), gateway errors, line ends, comments, write
    /// sizes, restarts from an id and pauses, every event is delivered exactly once, in order,
    /// with its exact data, every reconnection names the last event delivered, and the stream
    /// finishes (the server's 204) with no error.
    @Suite struct EventStreamCampaign {
        /// Scenarios per run (fewer under the sanitizers, which run the whole suite again).
        #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
        static let scenarios = 40
        #else
        static let scenarios = 250
        #endif

        struct Scenario: CustomStringConvertible {
            var feed = EventFeed()
            var startID = 0
            /// Pause after the event with this id, then resume.
            var pauseAfter: Int?

            var description: String {
                "count \(feed.count), lines \(feed.dataLines), end \(feed.lineEnd.debugDescription), bom \(feed.byteOrderMark), "
                    + "comments \(feed.comments), write \(feed.writeSize), start \(startID), pause \(pauseAfter.map(String.init) ?? "-"), "
                    + "plan \(feed.connections)"
            }

            init(random: inout SeededGenerator) {
                feed.count = Int.random(in: 1...30, using: &random)
                feed.dataLines = Int.random(in: 1...3, using: &random)
                feed.lineEnd = ["\n", "\r\n", "\r"].randomElement(using: &random)!
                feed.byteOrderMark = Bool.random(using: &random)
                feed.comments = Bool.random(using: &random)
                feed.retry = Int.random(in: 0...3, using: &random)
                feed.writeSize = [0, 1, 3, 17, 100].randomElement(using: &random)!
                startID = Bool.random(using: &random) ? 0 : Int.random(in: 0..<feed.count, using: &random)
                var lastID = startID
                for _ in 0..<Int.random(in: 0...5, using: &random) {
                    if Int.random(in: 0..<4, using: &random) == 0 {
                        feed.connections.append(.status([502, 503, 504, 429].randomElement(using: &random)!))
                    } else {
                        let length = feed.body(after: lastID).count
                        let bytes = Int.random(in: 0...length, using: &random)
                        feed.connections.append(.cut(bytes: bytes))
                        lastID = feed.lastCompleteID(after: lastID, within: bytes)
                    }
                }
                if Int.random(in: 0..<5, using: &random) == 0 {
                    pauseAfter = Int.random(in: (startID + 1)...feed.count, using: &random)
                }
            }

            /// The `Last-Event-ID` of each request, as the feed's plan makes them (nil: none).
            /// Request n plays plan entry n; a request that names the last event gets 204
            /// (unless its entry is a status), and that ends the stream.
            var expectedLastEventIDs: [String?] {
                var sent: [String?] = [startID == 0 ? nil : "\(startID)"]
                var last = startID
                for connection in feed.connections {
                    switch connection {
                    case .status: break
                    case .cut where last == feed.count, .whole where last == feed.count: return sent
                    case .cut(let bytes): last = feed.lastCompleteID(after: last, within: bytes)
                    case .whole: last = feed.count
                    }
                    sent.append(last == 0 ? nil : "\(last)")
                }
                if last < feed.count { sent.append("\(feed.count)") }
                return sent
            }
        }

        @Test func everyEventOnceInOrderAndEveryReconnectionNamesTheLastOne() async throws {
            var random = SeededGenerator(for: "event stream campaign")
            var configuration = EventStreamConfiguration()
            configuration.reconnectionDelay = .milliseconds(2)
            configuration.maximumConsecutiveFailures = nil
            var pauses = 0
            for number in 0..<Self.scenarios {
                let scenario = Scenario(random: &random)
                let what = "scenario \(number) (seed \(random.seed)): \(scenario)"
                let run = EventStreamRun { $0 = scenario.feed }
                let pausedOnce = Mutex(false)
                let operation = run.operation(lastEventID: scenario.startID == 0 ? "" : "\(scenario.startID)",
                                              configuration: configuration) { operation, event in
                    guard event.lastEventID == scenario.pauseAfter.map(String.init),
                          !pausedOnce.withLock({ let was = $0; $0 = true; return was }) else { return }
                    operation.pause()
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(2)) { operation.resume() }
                }
                operation.start()
                // Liveness: what can finish, finishes.
                do {
                    try await waitUntilFinished(operation, timeout: .seconds(20))
                } catch {
                    Issue.record("did not finish: \(what); events \(run.events.count), sent \(run.lastEventIDsSent)")
                    operation.cancel()
                    return
                }
                #expect(operation.error == nil, "\(what): \(operation.error.map { "\($0)" } ?? "")")
                let expected = run.expectedEvents(after: scenario.startID)
                let events = run.events
                guard events == expected else {
                    let firstWrong = zip(events, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                        ?? min(events.count, expected.count)
                    let got = firstWrong < events.count ? "\(events[firstWrong])" : "none"
                    let wanted = firstWrong < expected.count ? "\(expected[firstWrong])" : "none"
                    Issue.record("\(what): \(events.count) events delivered, \(expected.count) expected; first difference at \(firstWrong): \(got) against \(wanted)")
                    return
                }
                let sent = run.lastEventIDsSent
                if scenario.pauseAfter == nil {
                    #expect(sent == scenario.expectedLastEventIDs, "\(what)")
                } else {
                    pauses += 1
                    // A pause adds a connection whose id depends on how far the reading got:
                    // the ids still never go back and never name an event not delivered.
                    let numbers = sent.map { Int($0 ?? "") ?? 0 }
                    #expect(numbers == numbers.sorted(), "\(what): \(sent)")
                    #expect(numbers.allSatisfy { $0 == scenario.startID || (scenario.startID + 1...scenario.feed.count).contains($0) }, "\(what)")
                    #expect(sent.last == "\(scenario.feed.count)", "\(what)")
                }
            }
            print("event stream campaign: \(Self.scenarios) scenarios, \(pauses) with a pause")
        }
    }
}
