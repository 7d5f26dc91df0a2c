import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPOperations
import Synchronization
import Testing

extension AllTests {
    /// An event stream from a server nobody here wrote: sse-starlette under uvicorn
    /// (`Tests/Servers/sse_feed.py`), which ends each connection after a few events, sends
    /// `retry`, typed events, multi-line JSON data and ping comments, and answers 204 after
    /// the last event.
    @Suite(.enabled(if: ExternalServers.sseStarletteInstalled || ExternalServers.required, "sse-starlette is not installed"))
    struct EventStreamWithSSEStarlette {
        struct Tick: Decodable, Equatable {
            let id: Int
            let resumedFrom: Int
            let text: String
        }

        @Test func everyEventOnceThroughReconnectionsDecodedAsTyped() async throws {
            let manager = HTTPRequestOperationManager(baseURL: URL(string: ExternalServers.sseFeed.baseURL)!)
            var ticks: [Tick] = []
            var types = Set<String>()
            let events = try manager.events("feed", parameters: ["count": 23, "per": 5])
            for try await event in events {
                types.insert(event.event)
                #expect(event.lastEventID == "\(ticks.count + 1)")
                ticks.append(try event.decode(Tick.self))
            }
            #expect(events.operation.error == nil)
            // Ids 1…23, each once; each connection resumed after the last event of the one
            // before (5 per connection), then one more that got 204.
            #expect(ticks == (1...23).map { Tick(id: $0, resumedFrom: ($0 - 1) / 5 * 5, text: "event \($0)") })
            #expect(types == ["tick"])
            #expect(events.operation.connectionCount == 6)
            #expect(events.operation.lastEventID == "23")
        }
    }
}
