import Foundation
@testable import HTTPOperations
import Synchronization
import Testing

extension AllTests {
    /// The async door's buffer: what counts as taken, in which order, and what a cancel drops.
    @Suite struct EventChannels {
        static func event(_ id: String) -> ServerSentEvent {
            ServerSentEvent(data: "event \(id)", lastEventID: id)
        }

        /// What `taken` saw, in order.
        final class Taken: Sendable {
            let ids = Mutex<[String]>([])
            func record(_ item: EventChannel.Item) {
                switch item {
                case .event(let event): ids.withLock { $0.append(event.lastEventID) }
                case .lastEventID(let id): ids.withLock { $0.append("moved to \(id)") }
                }
            }
        }

        @Test func aCancelDropsWhatWaitsAndNothingIsTakenAfterIt() async throws {
            let taken = Taken()
            let channel = EventChannel { taken.record($0) }
            for id in ["1", "2", "3"] { #expect(await channel.push(.event(Self.event(id)))) }
            channel.cancel(with: URLError(.cancelled))
            await #expect(throws: URLError.self) { _ = try await channel.next() }
            #expect(taken.ids.withLock { $0 }.isEmpty)
            #expect(!(await channel.push(.event(Self.event("4")))))
        }

        @Test func idMovesAreTakenAfterTheEventsBeforeThemNeverBefore() async throws {
            let taken = Taken()
            let entered = TestSignal("the consumer is taking event 4")
            let gate = DispatchSemaphore(value: 0)
            let channel = EventChannel { item in
                if case .event(let event) = item, event.lastEventID == "4" {
                    entered.fire()
                    gate.wait()
                }
                taken.record(item)
            }
            #expect(await channel.push(.event(Self.event("4"))))
            let consumer = Task.detached { try await channel.next() }
            try await entered.wait()
            // The buffer is empty now, but event 4 is not yet taken: the move must wait for it.
            // The gate opens from a Dispatch thread: the consumer's and the producer's may be
            // all the cooperative pool has (two cores), and both wait until then.
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { gate.signal() }
            let producer = Task.detached { await channel.push(.lastEventID("5")) }
            #expect(await producer.value)
            #expect(try await consumer.value?.lastEventID == "4")
            #expect(taken.ids.withLock { $0 } == ["4", "moved to 5"])
        }
    }
}
