import HTTPOperations
import InMemoryTracing
import Logging
import MetricsTestKit

/// What the `observed` client switches on, to measure the cost of observability per request
/// against the plain `operations` client: a logger at `debug` whose handler receives every
/// record and drops it (the library builds its metadata; no I/O is measured), swift-metrics'
/// test backend (locks and keeps every value, as a real backend keeps aggregates), and the
/// in-memory tracer (a span per operation with its attributes, kept).
enum ObservedClient {
    enum Part {
        case logging, metrics, tracing
    }

    static func switchOn(_ manager: HTTPRequestOperationManager, _ parts: Set<Part>) {
        if parts.contains(.logging) {
            var logger = Logger(label: "bench") { _ in DroppingHandler() }
            logger.logLevel = .debug
            manager.logger = logger
        }
        if parts.contains(.metrics) { manager.metricsFactory = TestMetrics() }
        if parts.contains(.tracing) { manager.tracer = InMemoryTracer() }
    }

    /// Receives every record at `debug` and above, and drops it.
    struct DroppingHandler: LogHandler {
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {}
    }
}
