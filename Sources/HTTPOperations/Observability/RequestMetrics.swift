import CoreMetrics
import Foundation
import Synchronization

/// The swift-metrics instruments of one `MetricsFactory`, made once and shared by every
/// operation that reports to it (a manager makes one; see
/// ``OperationConfiguration/metricsFactory``). Labels and dimensions are listed in
/// Docs/Observability.md; every dimension value comes from ``MetricDimensions``, so the
/// number of time series is bounded.
///
/// Everything here runs on an operation's callback queue or on the thread that starts,
/// pauses or resumes it — never on the network thread: a metrics backend is user code.
///
/// Thread-safety: the instruments are swift-metrics' own (thread-safe); the two caches of
/// instruments by dimension live behind one Mutex.
final class RequestMetrics: Sendable {
    /// Metric labels.
    enum Label {
        static let requests = "httpop_requests_total"
        static let duration = "httpop_request_duration"
        static let timeToFirstByte = "httpop_request_time_to_first_byte"
        static let inFlight = "httpop_requests_in_flight"
        static let bytesSent = "httpop_sent_bytes_total"
        static let bytesReceived = "httpop_received_bytes_total"
        static let retries = "httpop_retries_total"
        static let resumes = "httpop_resumes_total"
        static let transfers = "httpop_transfers_total"
        static let cache = "httpop_cache_lookups_total"
    }

    /// What one operation reports when its outcome is known.
    struct Outcome {
        var method: String?
        /// The HTTP status, when there was a response.
        var status: Int?
        var error: (any Error)?
        /// From start to outcome, pauses and retry waits included.
        var duration: Duration
        var timings: TransferTimings?
        var retries: Int
        var resumes: Int
        /// How the operation's HTTP cache served it; nil when it has none or was bypassed.
        var cacheResult: URLConnectionOperation.CacheResult? = nil
    }

    /// The factory the instruments come from.
    let factory: any MetricsFactory
    /// Operations between start and outcome, not paused: the server's network activity
    /// indicator.
    let inFlight: Meter
    private let bytesSent: Counter
    private let bytesReceived: Counter
    private let retries: Counter
    private let resumes: Counter
    private let transfersOnNewConnections: Counter
    private let transfersOnReusedConnections: Counter
    /// By ``URLConnectionOperation/CacheResult``, in the order of its cases.
    private let cacheLookups: [URLConnectionOperation.CacheResult: Counter]

    /// Instruments with dimensions, made on first use of each combination, found by the
    /// dimensions' indices (see ``MetricDimensions``): no string is hashed per request.
    private struct Instruments {
        /// By method, status class and kind of error.
        var requests = [Counter?](repeating: nil, count: MetricDimensions.methods.count
            * MetricDimensions.statusClasses.count * MetricDimensions.errorKinds.count)
        /// By method.
        var timers = [(duration: CoreMetrics.Timer, timeToFirstByte: CoreMetrics.Timer)?](repeating: nil,
                                                                                           count: MetricDimensions.methods.count)
    }

    private let instruments = Mutex(Instruments())

    /// The instruments of `factory`; nil for swift-metrics' no-op factory, so an application
    /// that bootstrapped no backend pays nothing per request.
    init?(factory: any MetricsFactory) {
        guard !(factory is NOOPMetricsHandler) else { return nil }
        self.factory = factory
        inFlight = Meter(label: Label.inFlight, factory: factory)
        bytesSent = Counter(label: Label.bytesSent, factory: factory)
        bytesReceived = Counter(label: Label.bytesReceived, factory: factory)
        retries = Counter(label: Label.retries, factory: factory)
        resumes = Counter(label: Label.resumes, factory: factory)
        transfersOnNewConnections = Counter(label: Label.transfers, dimensions: [("connection", "new")], factory: factory)
        transfersOnReusedConnections = Counter(label: Label.transfers, dimensions: [("connection", "reused")], factory: factory)
        let results: [URLConnectionOperation.CacheResult] = [.hit, .staleHit, .revalidated, .miss]
        cacheLookups = Dictionary(uniqueKeysWithValues: results.map {
            ($0, Counter(label: Label.cache, dimensions: [("result", $0.rawValue)], factory: factory))
        })
    }

    /// The instruments of the factory bootstrapped with `MetricsSystem.bootstrap`, read once,
    /// the first time an operation is made (swift-metrics asks that the system be bootstrapped
    /// before anything is measured); nil when none was.
    static let bootstrapped: RequestMetrics? = RequestMetrics(factory: MetricsSystem.factory)

    /// Records one operation's outcome.
    func record(_ outcome: Outcome) {
        let method = MetricDimensions.methodIndex(outcome.method)
        let status = MetricDimensions.statusClassIndex(outcome.status)
        let error = MetricDimensions.errorKindIndex(outcome.error)
        let slot = (method * MetricDimensions.statusClasses.count + status) * MetricDimensions.errorKinds.count + error
        let (requests, timers) = instruments.withLock { instruments in
            let requests = instruments.requests[slot] ?? {
                let counter = Counter(label: Label.requests, dimensions: [("method", MetricDimensions.methods[method]),
                                                                          ("status", MetricDimensions.statusClasses[status]),
                                                                          ("error", MetricDimensions.errorKinds[error])],
                                      factory: factory)
                instruments.requests[slot] = counter
                return counter
            }()
            let timers = instruments.timers[method] ?? {
                let dimensions = [("method", MetricDimensions.methods[method])]
                let timers = (CoreMetrics.Timer(label: Label.duration, dimensions: dimensions, factory: factory),
                              CoreMetrics.Timer(label: Label.timeToFirstByte, dimensions: dimensions, factory: factory))
                instruments.timers[method] = timers
                return timers
            }()
            return (requests, timers)
        }
        requests.increment()
        timers.duration.recordNanoseconds(Self.nanoseconds(outcome.duration))
        if let timings = outcome.timings {
            // Only a transfer that got a first byte has a time to it.
            if timings.lastTransfer.firstByte > .zero {
                timers.timeToFirstByte.recordNanoseconds(Self.nanoseconds(timings.lastTransfer.firstByte))
            }
            if timings.bytesSent > 0 { bytesSent.increment(by: timings.bytesSent) }
            if timings.bytesReceived > 0 { bytesReceived.increment(by: timings.bytesReceived) }
            let reused = timings.transfersOnReusedConnections
            if reused > 0 { transfersOnReusedConnections.increment(by: Int64(reused)) }
            if timings.transfers > reused { transfersOnNewConnections.increment(by: Int64(timings.transfers - reused)) }
        }
        if outcome.retries > 0 { retries.increment(by: Int64(outcome.retries)) }
        if outcome.resumes > 0 { resumes.increment(by: Int64(outcome.resumes)) }
        if let result = outcome.cacheResult { cacheLookups[result]?.increment() }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
