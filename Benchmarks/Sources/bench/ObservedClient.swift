import CoreMetrics
import HTTPOperations
import InMemoryTracing
import Logging
import MetricsTestKit
import Tracing

/// What the `observed` client switches on, to measure the cost of observability per request
/// against the plain `operations` client: a logger at `debug` whose handler receives every
/// record and drops it (the library builds its metadata; no I/O is measured), swift-metrics'
/// test backend (locks and keeps every value, as a real backend keeps aggregates), and the
/// in-memory tracer (a span per operation with its attributes, kept).
enum ObservedClient {
    enum Part {
        case logging, metrics, tracing
        /// Metrics and tracing to ``DroppingBackends`` (with logging at debug).
        case droppingBackends
    }

    static func switchOn(_ manager: HTTPRequestOperationManager, _ parts: Set<Part>) {
        if parts.contains(.logging) {
            var logger = Logger(label: "bench") { _ in DroppingHandler() }
            logger.logLevel = .debug
            manager.defaultConfiguration.logger = logger
        }
        if parts.contains(.metrics) { manager.defaultConfiguration.metricsFactory = TestMetrics() }
        if parts.contains(.tracing) { manager.tracer = InMemoryTracer() }
        if parts.contains(.droppingBackends) {
            manager.defaultConfiguration.metricsFactory = DroppingBackends.Metrics()
            manager.tracer = DroppingBackends.Tracer()
        }
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

/// Backends that accept everything and keep nothing, so what `observedLibraryOnly` measures is
/// the library's own part: classifying, building attributes and metadata, redacting, injecting.
enum DroppingBackends {
    /// A metrics factory whose handlers are swift-metrics' no-op ones. Not the no-op factory
    /// itself, which the library recognizes and skips.
    struct Metrics: MetricsFactory {
        func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { NOOPMetricsHandler.instance }
        func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
            NOOPMetricsHandler.instance
        }
        func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { NOOPMetricsHandler.instance }
        func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
            NOOPMetricsHandler.instance
        }
        func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { NOOPMetricsHandler.instance }
        func destroyCounter(_ handler: any CounterHandler) {}
        func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
        func destroyMeter(_ handler: any MeterHandler) {}
        func destroyRecorder(_ handler: any RecorderHandler) {}
        func destroyTimer(_ handler: any TimerHandler) {}
    }

    /// A tracer whose spans record nothing; it injects a fixed W3C `traceparent`.
    struct Tracer: Tracing.Tracer {
        func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> ServiceContext,
                                               ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
                                               function: String, file fileID: String, line: UInt) -> Span {
            Span(context: context())
        }

        func activeSpan(identifiedBy context: ServiceContext) -> Span? { nil }

        func forceFlush() {}

        func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
            where Carrier == Inject.Carrier {
            injector.inject("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", forKey: "traceparent", into: &carrier)
        }

        func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
            where Carrier == Extract.Carrier {}
    }

    final class Span: Tracing.Span {
        let context: ServiceContext

        init(context: ServiceContext) {
            self.context = context
        }

        var operationName: String {
            get { "" }
            set {}
        }

        var attributes: SpanAttributes {
            get { [:] }
            set {}
        }

        var isRecording: Bool { true }
        func setStatus(_ status: SpanStatus) {}
        func addEvent(_ event: SpanEvent) {}
        func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {}
        func addLink(_ link: SpanLink) {}
        func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {}
    }
}
