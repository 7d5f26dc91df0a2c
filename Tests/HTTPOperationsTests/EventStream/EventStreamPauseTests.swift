import Foundation
@testable import HTTPOperations
import Synchronization
import Testing

extension AllTests.EventStreamOperations {
    /// A pause holds the stream: the events the connection had read ahead (here the whole
    /// feed, sent in one write) are not handed to the handler while it is paused; the last
    /// event id stays at the last one delivered, so the resumed connection asks for the rest.
    /// (They were delivered: ids 11 to 40 reached a handler that had paused at 10.)
    @Test func nothingIsDeliveredWhilePausedAndNothingIsLost() async throws {
        let run = EventStreamRun { $0.count = 40 }
        let paused = TestSignal("paused")
        let deliveredWhilePaused = Mutex<[String]>([])
        let operation = run.operation(configuration: Self.fast) { operation, event in
            if operation.isPaused { deliveredWhilePaused.withLock { $0.append(event.lastEventID) } }
            if event.lastEventID == "10" {
                operation.pause()
                paused.fire()
            }
        }
        operation.start()
        try await paused.wait()
        // Time for the read-ahead events to reach the handler, if they were going to.
        try await Task.sleep(for: .milliseconds(200))
        #expect(deliveredWhilePaused.withLock { $0 }.isEmpty, "\(deliveredWhilePaused.withLock { $0 })")
        #expect(operation.lastEventID == "10")
        operation.resume()
        try await waitUntilFinished(operation)
        #expect(operation.error == nil)
        // Every event once, in order: those held back came again after the resume.
        #expect(run.events == run.expectedEvents())
        #expect(run.lastEventIDsSent.dropFirst().first == "10", "\(run.lastEventIDsSent)")
    }
}
