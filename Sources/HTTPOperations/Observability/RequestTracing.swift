import Foundation
import Tracing

/// One client span per operation, with swift-distributed-tracing: started when the operation
/// starts, in the context the operation captured when it was made (a task-local context does
/// not reach the operation queue, let alone the network thread), propagated in the request's
/// header fields by the tracer's own injector (W3C `traceparent` with swift-otel), ended once
/// the outcome is known. Attributes follow OpenTelemetry's HTTP client conventions.
///
/// Nothing here runs on the network thread: a tracer is user code.
enum RequestTracing {
    /// Attribute names (OpenTelemetry semantic conventions, plus two of ours).
    enum Attribute {
        static let method = "http.request.method"
        static let url = "url.full"
        static let serverAddress = "server.address"
        static let serverPort = "server.port"
        static let statusCode = "http.response.status_code"
        static let errorType = "error.type"
        static let protocolVersion = "network.protocol.version"
        static let resendCount = "http.request.resend_count"
        static let requestID = "httpop.request.id"
        static let resumes = "httpop.resumes"
    }

    /// The tracer bootstrapped with `InstrumentationSystem` (or bound to the current task), or
    /// nil when it is the no-op one, so an application without tracing pays nothing per request.
    ///
    /// Asked for every operation made. The instrument in effect (the task's, else the
    /// bootstrapped one) is looked at first: when it is the no-op instrument, which no
    /// application that traces has, the tracer that `InstrumentationSystem.tracer` would find
    /// in it is the no-op one, and its search (a second lock, and casts to the `Tracer`
    /// protocol) is skipped.
    static var currentTracer: (any Tracer)? {
        if type(of: InstrumentationSystem.instrument) == NoOpInstrument.self { return nil }
        let tracer = InstrumentationSystem.tracer
        return tracer is NoOpTracer ? nil : tracer
    }

    /// Starts the span of `request` in `context` and writes the tracer's propagation header
    /// fields into `request`.
    static func startSpan(tracer: any Tracer, context: ServiceContext, request: inout URLRequest,
                          requestID: String) -> any Span {
        let method = request.httpMethod?.uppercased() ?? "GET"
        let span = tracer.startSpan(MetricDimensions.method(method) == "OTHER" ? "HTTP" : method, context: context, ofKind: .client)
        // Built here and set once: a span's attributes are behind its own lock.
        var attributes: SpanAttributes = [
            Attribute.method: .string(method),
            Attribute.url: .string(RequestLogging.redacted(request.url)),
            Attribute.requestID: .string(requestID),
        ]
        if let url = request.url {
            if let host = url.host { attributes[Attribute.serverAddress] = host }
            let scheme = url.scheme?.lowercased()
            if let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil) {
                attributes[Attribute.serverPort] = port
            }
        }
        span.attributes = attributes
        tracer.inject(span.context, into: &request, using: HeaderFieldInjector())
        return span
    }

    /// Records the outcome on `span` (`status`: the HTTP status, when there was a response) and ends it.
    static func end(_ span: any Span, status: Int?, error: (any Error)?, timings: TransferTimings?,
                    retries: Int, resumes: Int) {
        var attributes = span.attributes
        if let status { attributes[Attribute.statusCode] = status }
        if let version = timings?.lastTransfer.httpVersion { attributes[Attribute.protocolVersion] = version }
        if retries > 0 { attributes[Attribute.resendCount] = retries }
        if resumes > 0 { attributes[Attribute.resumes] = resumes }
        if let error {
            span.recordError(error)
            // A status of 400 or more is the reason when there is one, as the conventions ask.
            attributes[Attribute.errorType] = status.flatMap { $0 >= 400 ? String($0) : nil } ?? MetricDimensions.errorKind(error)
            span.setStatus(SpanStatus(code: .error, message: "\(error)"))
        } else if let status, status >= 400 {
            // A 4xx or 5xx that a lenient serializer accepted is still a failed request.
            attributes[Attribute.errorType] = String(status)
            span.setStatus(SpanStatus(code: .error))
        }
        span.attributes = attributes
        span.end()
    }
}

/// Writes propagation values as request header fields, replacing any of the same name.
struct HeaderFieldInjector: Injector {
    func inject(_ value: String, forKey key: String, into request: inout URLRequest) {
        request.setValue(value, forHTTPHeaderField: key)
    }
}
