import CoreMetrics
import Foundation
import Tracing

/// Where an operation reports: swift-metrics instruments and a swift-distributed-tracing
/// span. Both are off unless the application bootstrapped a backend (or sets one here), and
/// then cost nothing per request. See Docs/Observability.md for every label, dimension and
/// attribute.
extension URLConnectionOperation {
    /// The tracer that records the operation's client span and writes its propagation header
    /// fields (W3C `traceparent` with swift-otel) into the request. Default: the tracer of
    /// `InstrumentationSystem` (or bound with `withTracer`) when the operation was made, nil
    /// when that is the no-op tracer; nil traces nothing. Read when the operation starts.
    public var tracer: (any Tracer)? {
        get { state.withLock { $0.tracer } }
        set { state.withLock { $0.tracer = newValue } }
    }

    /// The context the operation's span is a child of. Default: `ServiceContext.current` where
    /// the operation was made — the operation starts on a queue, where the task's context is
    /// gone, so it is captured then.
    public var serviceContext: ServiceContext? {
        get { state.withLock { $0.serviceContext } }
        set { state.withLock { $0.serviceContext = newValue } }
    }

    /// Starts the span when there is a tracer, writing its header fields into `request`.
    func startSpan(_ parent: SpanParent?, request: inout URLRequest) {
        guard let tracer = parent?.tracer else { return }
        let span = RequestTracing.startSpan(tracer: tracer, context: parent?.context ?? .topLevel,
                                            request: &request, requestID: requestID)
        let sent = request
        state.withLock { state in
            state.observation.span = span
            state.currentRequest = sent
        }
    }

    /// Ends the span and records the metrics of the outcome; on the callback queue, once.
    func reportOutcome(_ observation: Observation, timings: TransferTimings?, retries: Int, resumes: Int) {
        guard observation.metrics != nil || observation.span != nil else { return }
        // The status from the head when the response object was not built: building it costs
        // more than everything else here together (Docs/Performance.md, "The cost of
        // observability").
        let (status, error, cacheResult) = state.withLock { state in
            ((state.response as? HTTPURLResponse)?.statusCode ?? state.responseHead?.head.statusCode, state.error,
             state.cacheExchange?.result)
        }
        if let span = observation.span {
            RequestTracing.end(span, status: status, error: error, timings: timings, retries: retries, resumes: resumes)
        }
        if let metrics = observation.metrics {
            let duration = observation.startedAt.map { ContinuousClock.now - $0 } ?? .zero
            metrics.record(.init(method: request.httpMethod, status: status, error: error, duration: duration,
                                 timings: timings, retries: retries, resumes: resumes, cacheResult: cacheResult))
        }
    }
}
