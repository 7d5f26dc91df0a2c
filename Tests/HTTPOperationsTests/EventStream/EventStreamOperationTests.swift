import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Synchronization
import Testing

/// Runs event-stream operations against the test server's feeds and keeps every event
/// delivered, duplicates included.
final class EventStreamRun: Sendable {
    let key = "feed-\(UUID().uuidString.prefix(8))"
    let feed: EventFeed
    let received = Mutex<[ServerSentEvent]>([])

    init(_ configure: (inout EventFeed) -> Void = { _ in }) {
        var feed = EventFeed()
        configure(&feed)
        self.feed = feed
    }

    var url: URL { testServer.url(.events(key: key, feed: feed)) }

    /// An operation on the feed whose handler keeps the events (and runs `onEvent`).
    func operation(lastEventID: String = "", configuration: EventStreamConfiguration = EventStreamConfiguration(),
                   onEvent: @escaping @Sendable (EventStreamOperation, ServerSentEvent) -> Void = { _, _ in }) -> EventStreamOperation {
        let operation = EventStreamOperation(request: URLRequest(url: url, timeoutInterval: 10), lastEventID: lastEventID,
                                             configuration: configuration)
        operation.setEventHandler { [self] operation, event in
            received.withLock { $0.append(event) }
            onEvent(operation, event)
        }
        return operation
    }

    /// The events the feed has after `lastID`, as the client must deliver them.
    func expectedEvents(after lastID: Int = 0) -> [ServerSentEvent] {
        (lastID + 1...max(lastID + 1, feed.count)).filter { $0 <= feed.count }.map {
            ServerSentEvent(data: feed.data(of: $0), lastEventID: "\($0)")
        }
    }

    var events: [ServerSentEvent] { received.withLock { $0 } }
    var lastEventIDsSent: [String?] { testServer.lastEventIDs(forEventFeed: key) }
}

extension AllTests {
    /// An event stream over real HTTP: events in order and once, reconnection after a drop
    /// with `Last-Event-ID`, the server's 204, refusals, pause and resume, cancel, a restart,
    /// and every door (operation, manager, async sequence, HTTPTypes).
    @Suite struct EventStreamOperations {
        static let fast: EventStreamConfiguration = {
            var configuration = EventStreamConfiguration()
            configuration.reconnectionDelay = .milliseconds(5)
            return configuration
        }()

        @Test func everyEventArrivesOnceInOrderAndThe204EndsTheStream() async throws {
            let run = EventStreamRun {
                $0.count = 25
                $0.dataLines = 3
                $0.lineEnd = "\r\n"
                $0.byteOrderMark = true
                $0.comments = true
                $0.writeSize = 7
            }
            let operation = run.operation(configuration: Self.fast)
            operation.start()
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(run.events == run.expectedEvents())
            // The whole feed, then a reconnection that names the last event and gets 204.
            #expect(run.lastEventIDsSent == [nil, "25"])
            #expect(operation.connectionCount == 2)
            #expect(operation.lastEventID == "25")
        }

        @Test func aConnectionCutMidEventResumesAfterTheLastEventDelivered() async throws {
            let run = EventStreamRun {
                $0.count = 12
                $0.dataLines = 2
                $0.connections = [.cut(bytes: 100), .cut(bytes: 3), .cut(bytes: 250), .whole]
            }
            let operation = run.operation(configuration: Self.fast)
            operation.start()
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(run.events == run.expectedEvents())
            // What each connection's cut left whole decides the next Last-Event-ID.
            var expected: [String?] = [nil]
            var last = 0
            for case .cut(let bytes) in run.feed.connections {
                last = run.feed.lastCompleteID(after: last, within: bytes)
                expected.append(last == 0 ? nil : "\(last)")
            }
            expected.append("12")
            #expect(run.lastEventIDsSent == expected)
        }

        @Test func aGatewaysErrorIsReconnectedAfterAndOtherAnswersFailTyped() async throws {
            let retried = EventStreamRun {
                $0.count = 3
                $0.connections = [.status(503), .status(502), .whole]
            }
            let operation = retried.operation(configuration: Self.fast)
            operation.start()
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(retried.events == retried.expectedEvents())

            for (plan, code) in [(EventFeed.Connection.status(404), ResponseValidationError.Code.unacceptableStatusCode),
                                 (.whole, .unacceptableContentType)] {
                let refused = EventStreamRun {
                    $0.connections = [plan]
                    $0.contentType = "application/json"
                }
                let operation = refused.operation(configuration: Self.fast)
                operation.start()
                try await waitUntilFinished(operation)
                let error = try #require(operation.error as? ResponseValidationError)
                #expect(error.code == code)
                #expect(refused.events.isEmpty)
                #expect(operation.connectionCount == 1)
            }
        }

        @Test func failuresInARowEndTheStreamWithTheLastOne() async throws {
            let run = EventStreamRun { $0.connections = [.status(503), .status(503), .status(503)] }
            var configuration = Self.fast
            configuration.maximumConsecutiveFailures = 3
            let operation = run.operation(configuration: configuration)
            operation.start()
            try await waitUntilFinished(operation)
            let error = try #require(operation.error as? EventStreamError)
            #expect(error.reason == .reconnectsExhausted(attempts: 3))
            #expect((error.underlyingError as? ResponseValidationError)?.statusCode == 503)
            #expect(run.lastEventIDsSent.count == 3)
        }

        @Test func anEventPastTheLimitStopsTheStream() async throws {
            let run = EventStreamRun { $0.dataLines = 40 }
            var configuration = Self.fast
            configuration.maximumEventBytes = 256
            let operation = run.operation(configuration: configuration)
            operation.start()
            try await waitUntilFinished(operation)
            let error = try #require(operation.error as? EventStreamError)
            #expect(error.reason == .eventTooLarge(limit: 256))
            #expect(error.url == run.url)
            #expect(run.events.isEmpty)
        }

        @Test func aPauseClosesTheConnectionAndResumeGoesOnFromTheLastEvent() async throws {
            let run = EventStreamRun {
                $0.count = 40
                $0.writeSize = 64
            }
            let paused = TestSignal("paused")
            let operation = run.operation(configuration: Self.fast) { operation, event in
                if event.lastEventID == "10" {
                    operation.pause()
                    paused.fire()
                }
            }
            operation.start()
            try await paused.wait()
            #expect(operation.isPaused)
            #expect(!operation.isExecuting)
            operation.resume()
            try await waitUntilFinished(operation)
            #expect(operation.error == nil)
            #expect(run.events == run.expectedEvents())
            let sent = run.lastEventIDsSent
            // The first connection, the one after the resume (from event 10 or a later one it
            // had already read), and the one that gets 204 — or, when the first connection had
            // read all 40 before the pause closed it, the resumed one gets the 204.
            #expect(sent.first == .some(nil) && sent.last == "40", "\(sent)")
            #expect((2...3).contains(sent.count), "\(sent)")
            #expect(sent.dropFirst().allSatisfy { (Int($0 ?? "") ?? 0) >= 10 }, "\(sent)")
        }

        @Test func aNewOperationResumesFromAnEarlierOnesLastEventID() async throws {
            let run = EventStreamRun { $0.count = 9 }
            let operation = run.operation(lastEventID: "6", configuration: Self.fast)
            operation.start()
            try await waitUntilFinished(operation)
            #expect(run.events == run.expectedEvents(after: 6))
            #expect(run.lastEventIDsSent == ["6", "9"])
        }

        @Test func aCancelEndsTheStreamAndNothingIsDeliveredAfterIt() async throws {
            let run = EventStreamRun {
                $0.count = 200
                $0.writeSize = 32
            }
            let cancelledAt = Mutex(0)
            let operation = run.operation(configuration: Self.fast) { operation, event in
                if event.lastEventID == "5" {
                    operation.cancel()
                    cancelledAt.withLock { $0 = 5 }
                }
            }
            operation.start()
            try await waitUntilFinished(operation)
            #expect((operation.error as? URLError)?.code == .cancelled)
            #expect(operation.isCancelled)
            #expect(run.events == Array(run.expectedEvents().prefix(5)))
            #expect(cancelledAt.withLock { $0 } == 5)
        }

        @Test func theManagersDoorsAgreeOnTheEvents() async throws {
            let run = EventStreamRun {
                $0.count = 30
                $0.connections = [.cut(bytes: 500)]
            }
            let manager = HTTPRequestOperationManager(baseURL: testServer.baseURL)

            // The async sequence, through the manager's queue.
            var viaSequence: [ServerSentEvent] = []
            for try await event in manager.events(URLRequest(url: run.url), configuration: Self.fast) {
                viaSequence.append(event)
            }
            #expect(viaSequence == run.expectedEvents())

            // The HTTPTypes door, decoded as a Decodable would be (the data here is text).
            let again = EventStreamRun { $0.count = 4 }
            var viaHTTPTypes: [String] = []
            for try await event in try manager.events(for: HTTPRequest(method: .get, url: again.url), configuration: Self.fast) {
                viaHTTPTypes.append(event.data)
            }
            #expect(viaHTTPTypes == again.expectedEvents().map(\.data))

            // The callback door: an operation made by the manager, on its queue.
            let third = EventStreamRun { $0.count = 6 }
            let delivered = Mutex<[String]>([])
            let operation = manager.eventStreamOperation(with: URLRequest(url: third.url), configuration: Self.fast) { _, event in
                delivered.withLock { $0.append(event.lastEventID) }
            }
            manager.operationQueue.addOperation(operation)
            try await waitUntilFinished(operation)
            #expect(delivered.withLock { $0 } == (1...6).map(String.init))
        }

        @Test func anEventDecodesItsJSONData() throws {
            struct Update: Decodable, Equatable {
                let id: Int
                let text: String
            }
            let event = ServerSentEvent(event: "update", data: #"{"id": 3, "text": "hé"}"#, lastEventID: "3")
            #expect(try event.decode(Update.self) == Update(id: 3, text: "hé"))
            #expect(throws: ResponseSerializationError.self) { try ServerSentEvent(data: "not json").decode(Update.self) }
        }
    }
}

extension AllTests.EventStreamOperations {
    /// The async sequence's `lastEventID` is what its loop has taken, not what waits in its
    /// buffer: a process that saves it after each event and restarts loses nothing.
    @Test func theSequencesLastEventIDIsTheLastOneTaken() async throws {
        let run = EventStreamRun { $0.count = 40 }
        let manager = HTTPRequestOperationManager(baseURL: testServer.baseURL)
        let events = manager.events(URLRequest(url: run.url), configuration: Self.fast)
        var iterator = events.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.lastEventID == "1")
        // Time for the stream to read ahead into its buffer (16 events) and wait there.
        try await Task.sleep(for: .milliseconds(300))
        #expect(events.operation.lastEventID == "1")
        #expect(events.operation.eventCount == 1)
        let second = try await iterator.next()
        #expect(second?.lastEventID == "2")
        #expect(events.operation.lastEventID == "2")
        events.operation.cancel()
    }

    /// A cancel finishes the operation even while its loop waits for room in a sequence's
    /// buffer that nobody reads.
    @Test func aCancelFinishesAStreamWhoseBufferIsFull() async throws {
        let run = EventStreamRun { $0.count = 60 }
        let operation = EventStreamOperation(request: URLRequest(url: run.url), configuration: Self.fast)
        let events = ServerSentEventStream(operation)
        operation.start()
        // Time for 16 events to fill the buffer and the loop to wait for room.
        try await Task.sleep(for: .milliseconds(300))
        operation.cancel()
        try await waitUntilFinished(operation, timeout: .seconds(5))
        #expect((operation.error as? URLError)?.code == .cancelled)
        // Nothing is handed out after the cancel.
        var iterator = events.makeAsyncIterator()
        await #expect(throws: URLError.self) { _ = try await iterator.next() }
    }

    /// A pause right after `start()`, before the stream's task has run, holds.
    @Test func aPauseRightAfterStartHolds() async throws {
        let run = EventStreamRun { $0.count = 3 }
        for _ in 0..<20 {
            let operation = run.operation(configuration: Self.fast)
            operation.start()
            operation.pause()
            #expect(operation.isPaused)
            #expect(!operation.isExecuting)
            operation.cancel()
            try await waitUntilFinished(operation, timeout: .seconds(5))
        }
    }
}

extension AllTests.EventStreamOperations {
    /// A connection that read some of the body (a comment a server sends to keep it open)
    /// is not a failure, however many in a row end without an event.
    @Test func quietConnectionsAreNotFailures() async throws {
        let run = EventStreamRun {
            $0.count = 2
            $0.comments = true
            // `retry: 5` and `: keep-alive`, then the cut: no event.
            $0.connections = Array(repeating: .cut(bytes: 22), count: 6)
        }
        var configuration = Self.fast
        configuration.maximumConsecutiveFailures = 3
        let operation = run.operation(configuration: configuration)
        operation.start()
        try await waitUntilFinished(operation)
        #expect(operation.error == nil)
        #expect(run.events == run.expectedEvents())
        #expect(run.lastEventIDsSent == [nil, nil, nil, nil, nil, nil, nil, "2"])
    }
}

extension AllTests.EventStreamOperations {
    /// A pause and a resume right after `start()`, before the stream's task has run: the
    /// stream goes on and finishes.
    @Test func aPauseAndAResumeRightAfterStartGoOn() async throws {
        for _ in 0..<20 {
            let run = EventStreamRun { $0.count = 3 }
            let operation = run.operation(configuration: Self.fast)
            operation.start()
            operation.pause()
            operation.resume()
            try await waitUntilFinished(operation, timeout: .seconds(5))
            #expect(operation.error == nil)
            #expect(run.events == run.expectedEvents())
        }
    }
}

extension AllTests.EventStreamOperations {
    /// A POST that streams its answer (as model APIs do) is sent once: its clean end is the
    /// end, a drop fails it, and a 503 is refused, never followed by the POST again.
    @Test func aPostedStreamIsNeverSentTwice() async throws {
        for (plan, expectsError) in [([EventFeed.Connection](), false), ([.cut(bytes: 100)], true), ([.status(503)], true)] {
            let run = EventStreamRun {
                $0.count = 5
                $0.connections = plan
            }
            var request = URLRequest(url: run.url)
            request.httpMethod = "POST"
            request.httpBody = Data(#"{"prompt": "hello"}"#.utf8)
            let operation = EventStreamOperation(request: request, configuration: Self.fast)
            let received = Mutex<[ServerSentEvent]>([])
            operation.setEventHandler { _, event in received.withLock { $0.append(event) } }
            operation.start()
            try await waitUntilFinished(operation)
            #expect(testServer.requestCount(forEventFeed: run.key) == 1, "\(plan)")
            #expect((operation.error != nil) == expectsError, "\(plan): \(operation.error.map { "\($0)" } ?? "no error")")
            if plan.isEmpty { #expect(received.withLock { $0 } == run.expectedEvents()) }
        }
    }
}

extension AllTests.EventStreamOperations {
    /// Events a sequence's loop takes after the stream ended (they waited in its buffer)
    /// count as delivered: a restart from `lastEventID` does not get them again.
    @Test func eventsTakenAfterTheEndCount() async throws {
        let run = EventStreamRun { $0.count = 5 }
        let operation = EventStreamOperation(request: URLRequest(url: run.url), configuration: Self.fast)
        let events = ServerSentEventStream(operation)
        operation.start()
        try await waitUntilFinished(operation)
        #expect(operation.error == nil)
        var taken: [ServerSentEvent] = []
        for try await event in events { taken.append(event) }
        #expect(taken == run.expectedEvents())
        #expect(operation.eventCount == 5)
        #expect(operation.lastEventID == "5")
    }

    /// A manager that has shut down refuses a stream: its loop gets the manager's error at
    /// once, and the operation is finished.
    @Test func aStreamRefusedByAShutDownManagerEnds() async throws {
        let run = EventStreamRun { $0.count = 2 }
        let manager = HTTPRequestOperationManager(baseURL: testServer.baseURL)
        _ = await manager.shutdown(gracePeriod: .zero)
        let events = manager.events(URLRequest(url: run.url), configuration: Self.fast)
        await #expect(throws: TransferError.self) {
            for try await _ in events {}
        }
        try await waitUntilFinished(events.operation, timeout: .seconds(5))
        #expect(testServer.requestCount(forEventFeed: run.key) == 0)
    }

    /// A total timeout (a manager's, meant for its ordinary requests) is taken off a stream's
    /// connections: it would cut every one of them.
    @Test func aTotalTimeoutIsNotAConnectionsLimit() async throws {
        let run = EventStreamRun { $0.count = 2 }
        final class Watched: EventStreamOperation, @unchecked Sendable {
            // @unchecked Sendable: its one stored property is a Mutex.
            let connections = Mutex<[HTTPRequestOperation]>([])
            override func connectionOperation(for request: URLRequest) -> HTTPRequestOperation {
                let connection = super.connectionOperation(for: request)
                // As a manager whose default configuration has one would give it.
                var configuration = connection.configuration
                configuration.totalTimeout = .seconds(30)
                connection.configuration = configuration
                connections.withLock { $0.append(connection) }
                return connection
            }
        }
        let operation = Watched(request: URLRequest(url: run.url), configuration: Self.fast)
        operation.start()
        try await waitUntilFinished(operation)
        let connections = operation.connections.withLock { $0 }
        #expect(connections.count == 2)
        #expect(connections.allSatisfy { $0.configuration.totalTimeout == nil })
    }
}
