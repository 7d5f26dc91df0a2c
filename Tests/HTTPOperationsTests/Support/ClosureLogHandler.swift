import Logging

/// A log handler that hands every event to a closure, with the handler's metadata merged
/// under the event's: for tests that record what the library logs, or act when it logs.
struct ClosureLogHandler: LogHandler {
    let onLog: @Sendable (_ level: Logger.Level, _ message: String, _ metadata: Logger.Metadata) -> Void
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        onLog(event.level, "\(event.message)", metadata.merging(event.metadata ?? [:]) { $1 })
    }
}
