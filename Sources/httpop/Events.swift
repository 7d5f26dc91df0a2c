import ArgumentParser
import Foundation
import HTTPOperations
import Synchronization

/// `httpop events URL`: print a Server-Sent Events stream as it arrives.
struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a Server-Sent Events stream as it arrives, reconnecting where it left off.",
        discussion: """
            Each event is printed as 'type [id]: data' (data lines indented). After a dropped \
            connection or a gateway's 502/503/504 the stream reconnects with Last-Event-ID, \
            after the server's retry. With --state FILE the last event id is written to FILE \
            after every event, and the same command run again resumes after it. Exits 0 when \
            the server ends the stream with 204 or --max-events is reached, 1 with a one-line \
            error otherwise.
            """
    )

    @Argument(help: "The event stream's URL.")
    var url: String

    @OptionGroup var options: RequestOptions

    @Option(help: "Resume after this event id (sent as Last-Event-ID).")
    var lastEventID: String?

    @Option(help: ArgumentHelp("Keep the last event id in FILE: read at start, written after every event.", valueName: "file"))
    var state: String?

    @Option(help: "Stop after this many events.")
    var maxEvents: Int?

    func validate() throws {
        if let maxEvents, maxEvents < 1 { throw ValidationError("--max-events must be at least 1") }
    }

    func run() throws {
        let request = try options.request(for: url)
        // The options are read once, into one configuration every connection gets: a bad one
        // fails before anything is sent, and the cookie store is one for the whole stream.
        let template = HTTPRequestOperation(request: request)
        try options.configure(template)
        let configuration = template.configuration
        let resumeFrom = lastEventID
            ?? state.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }?.trimmingCharacters(in: .whitespacesAndNewlines)
            ?? ""
        let operation = ConfiguredEventStream(request: request, lastEventID: resumeFrom) { connection in
            connection.configuration = configuration
        }
        let delivered = Mutex(0)
        let (state, maxEvents) = (state, maxEvents)
        operation.setEventHandler { operation, event in
            let data = event.data.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n    ")
            say(event.lastEventID.isEmpty ? "\(event.event): \(data)" : "\(event.event) [\(event.lastEventID)]: \(data)")
            if let state {
                do {
                    try event.lastEventID.write(toFile: state, atomically: true, encoding: .utf8)
                } catch {
                    CommandFailure("error: the state file \(state) was not written: \(error)").exit()
                }
            }
            if let maxEvents, delivered.withLock({ $0 += 1; return $0 }) >= maxEvents { operation.cancel() }
        }
        operation.start()
        operation.waitUntilFinished()
        RequestOptions.waitForCallbacks()
        options.saveCookies(of: template)
        // An id an event without data moved the stream to is saved too.
        if let state { try? operation.lastEventID.write(toFile: state, atomically: true, encoding: .utf8) }
        let reachedLimit = maxEvents.map { delivered.withLock { $0 } >= $0 } ?? false
        if let error = operation.error, !reachedLimit {
            CommandFailure(error).exit()
        }
    }
}

/// An event stream whose every connection gets the command's TLS, route and cookie options
/// (one configuration, one cookie store):
/// the subclassing hook ``EventStreamOperation/connectionOperation(for:)`` at work.
final class ConfiguredEventStream: EventStreamOperation, @unchecked Sendable {
    // @unchecked Sendable: its one stored property is an immutable Sendable closure.
    private let configure: @Sendable (HTTPRequestOperation) -> Void

    init(request: URLRequest, lastEventID: String, configure: @escaping @Sendable (HTTPRequestOperation) -> Void) {
        self.configure = configure
        super.init(request: request, lastEventID: lastEventID)
    }

    override func connectionOperation(for request: URLRequest) -> HTTPRequestOperation {
        let connection = super.connectionOperation(for: request)
        configure(connection)
        return connection
    }
}
