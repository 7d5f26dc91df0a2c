import Foundation
@testable import HTTPOperations
import HTTPTestServer
import InMemoryTracing
import Synchronization
import Testing
import Tracing

/// One client span per operation, recorded by swift-distributed-tracing's in-memory tracer,
/// and the propagation header fields the server receives.
extension AllTests {
    @Suite struct TracingTests {
        /// An in-memory tracer that propagates as W3C Trace Context does: a `traceparent`
        /// field, `00-<32 hex trace id>-<16 hex span id>-01`, as swift-otel's propagator writes.
        struct W3CTracer: Tracer {
            let memory = InMemoryTracer(idGenerator: .init(
                nextTraceID: { String(format: "%016llx%016llx", UInt64.random(in: 1...UInt64.max), UInt64.random(in: 0...UInt64.max)) },
                nextSpanID: { String(format: "%016llx", UInt64.random(in: 1...UInt64.max)) }))

            func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> ServiceContext,
                                                   ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
                                                   function: String, file fileID: String, line: UInt) -> InMemorySpan {
                memory.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function,
                                 file: fileID, line: line)
            }

            func activeSpan(identifiedBy context: ServiceContext) -> InMemorySpan? {
                memory.activeSpan(identifiedBy: context)
            }

            func forceFlush() {}

            func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
                where Carrier == Inject.Carrier {
                guard let span = context.inMemorySpanContext else { return }
                injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
            }

            func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
                where Carrier == Extract.Carrier {}
        }

        static func manager(tracer: any Tracer) -> HTTPRequestOperationManager {
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            manager.tracer = tracer
            return manager
        }

        @Test func anOperationMadeInATracedTaskIsAChildSpanAndItsTraceparentReachesTheServer() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let tracer = W3CTracer()
            let manager = Self.manager(tracer: tracer)
            // Made inside the parent span's task, started later by the queue on another thread.
            let (op, parent) = tracer.withSpan("parent") { span in
                (manager.httpRequestOperation(with: URLRequest(url: server.url(.bytes(10))), success: nil, failure: nil), span.spanContext)
            }
            manager.enqueue(op)
            try await waitUntilFinished(op)
            #expect(op.error == nil)

            let spans = tracer.memory.finishedSpans.filter { $0.operationName == "GET" }
            try #require(spans.count == 1, "one span per operation: \(spans.map(\.operationName))")
            let span = spans[0]
            #expect(span.kind == .client)
            #expect(span.traceID == parent.traceID && span.parentSpanID == parent.spanID)
            #expect(span.attributes.get(RequestTracing.Attribute.method)?.toSpanAttribute() == "GET")
            #expect(span.attributes.get(RequestTracing.Attribute.statusCode)?.toSpanAttribute() == 200)
            #expect(span.attributes.get(RequestTracing.Attribute.serverAddress)?.toSpanAttribute() == "127.0.0.1")
            #expect(span.attributes.get(RequestTracing.Attribute.requestID)?.toSpanAttribute() == .string(op.requestID))
            #expect(span.status == nil && span.errors.isEmpty)

            let traceparent = try #require(server.receivedRequests.last?.header("traceparent"))
            #expect(traceparent == "00-\(span.traceID)-\(span.spanID)-01")
            #expect(traceparent.wholeMatch(of: /00-[0-9a-f]{32}-[0-9a-f]{16}-01/) != nil, "\(traceparent)")
            #expect(op.currentRequest.value(forHTTPHeaderField: "traceparent") == traceparent)
        }

        @Test func theFieldStaysOnEveryRedirectAndTheSpanCoversThemAll() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let tracer = W3CTracer()
            let op = Self.manager(tracer: tracer).httpRequestOperation(with: URLRequest(url: server.url(.redirect(times: 2))),
                                                                        success: nil, failure: nil)
            OperationQueue().addOperation(op)
            try await waitUntilFinished(op)
            let span = try #require(tracer.memory.finishedSpans.first)
            #expect(tracer.memory.finishedSpans.count == 1)
            let fields = server.receivedRequests.map { $0.header("traceparent") }
            #expect(fields.count == 3 && Set(fields).count == 1 && fields[0] == "00-\(span.traceID)-\(span.spanID)-01", "\(fields)")
        }

        @Test func failuresAreRecordedWithTheirKind() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let tracer = InMemoryTracer()
            let manager = Self.manager(tracer: tracer)
            // A 503: the serializer refuses it; error.type is the status, as the conventions ask.
            let refused = manager.httpRequestOperation(with: URLRequest(url: server.url(.status(503))), success: nil, failure: nil)
            manager.enqueue(refused)
            try await waitUntilFinished(refused)
            // Nobody listens: a connection error.
            let unreachable = manager.httpRequestOperation(with: URLRequest(url: URL(string: "http://127.0.0.1:\(try freeLoopbackPort())/")!),
                                                           success: nil, failure: nil)
            manager.enqueue(unreachable)
            try await waitUntilFinished(unreachable)

            let spans = tracer.finishedSpans
            #expect(spans.count == 2)
            let byStatus = try #require(spans.first { $0.attributes.get(RequestTracing.Attribute.statusCode) != nil })
            #expect(byStatus.attributes.get(RequestTracing.Attribute.errorType)?.toSpanAttribute() == "503")
            #expect(byStatus.status?.code == .error && byStatus.errors.count == 1)
            let byTransport = try #require(spans.first { $0.attributes.get(RequestTracing.Attribute.statusCode) == nil })
            #expect(byTransport.attributes.get(RequestTracing.Attribute.errorType)?.toSpanAttribute() == "connect")
            #expect(byTransport.status?.code == .error)
            #expect((byTransport.errors.first?.error as? URLError)?.code == .cannotConnectToHost)
            // The in-memory tracer's own fields went out with the request that got an answer.
            #expect(server.receivedRequests.last?.header(InMemoryTracer.traceIDKey) == byStatus.traceID)
        }

        @Test func withoutATracerNothingIsAddedToTheRequest() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            // No test bootstraps the instrumentation system: its tracer is the no-op one.
            #expect(manager.tracer == nil)
            let op = manager.httpRequestOperation(with: URLRequest(url: server.url(.bytes(1))), success: nil, failure: nil)
            #expect(op.tracer == nil)
            manager.enqueue(op)
            try await waitUntilFinished(op)
            let names = server.receivedRequests.last?.headers.map { $0.name.lowercased() } ?? []
            #expect(!names.isEmpty && !names.contains("traceparent") && !names.contains(InMemoryTracer.traceIDKey))
        }

        @Test func aTracerBoundToTheTaskIsTakenWhenTheOperationIsMade() async throws {
            let tracer = InMemoryTracer()
            let op = withTracer(tracer) {
                HTTPRequestOperation(request: URLRequest(url: testServer.url(.bytes(1))))
            }
            #expect(op.tracer is InMemoryTracer)
            op.responseSerializer = HTTPResponseSerializer()
            OperationQueue().addOperation(op)
            try await waitUntilFinished(op)
            #expect(tracer.finishedSpans.count == 1)
        }
    }
}
