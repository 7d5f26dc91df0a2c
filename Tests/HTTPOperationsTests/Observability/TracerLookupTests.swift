import Foundation
@testable import HTTPOperations
import InMemoryTracing
import Testing
import Tracing

/// Which tracer an operation takes from swift-distributed-tracing, for every way an
/// application can set one up: nothing, a tracer, a tracer among others, the no-op tracer,
/// an instrument that does not trace. The instrumentation system can be bootstrapped once per
/// process, so each case runs in a child process of its own (an exit test) and reports by
/// its exit status whether `RequestTracing.currentTracer` found the tracer it should.
extension AllTests {
    @Suite struct TracerLookupTests {
        enum Setup: String, CaseIterable, Codable, Sendable {
            case nothing, tracer, tracerAmongOthers, noOpTracer, instrumentThatDoesNotTrace, othersWithoutATracer
            case tracerBoundToTheTask

            /// Whether an operation made under this setup traces.
            var traces: Bool {
                switch self {
                case .tracer, .tracerAmongOthers, .tracerBoundToTheTask: true
                case .nothing, .noOpTracer, .instrumentThatDoesNotTrace, .othersWithoutATracer: false
                }
            }

            func bootstrap() {
                switch self {
                case .nothing, .tracerBoundToTheTask: break
                case .tracer: InstrumentationSystem.bootstrap(InMemoryTracer())
                case .tracerAmongOthers:
                    InstrumentationSystem.bootstrap(MultiplexInstrument([PlainInstrument(), InMemoryTracer()]))
                case .noOpTracer: InstrumentationSystem.bootstrap(NoOpTracer())
                case .instrumentThatDoesNotTrace: InstrumentationSystem.bootstrap(PlainInstrument())
                case .othersWithoutATracer:
                    InstrumentationSystem.bootstrap(MultiplexInstrument([PlainInstrument(), NoOpInstrument()]))
                }
            }
        }

        /// Propagates nothing and traces nothing: an instrument that is no `Tracer`.
        struct PlainInstrument: Instrument {
            func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext,
                                                      using extractor: Extract) where Extract.Carrier == Carrier {}
            func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier,
                                                   using injector: Inject) where Inject.Carrier == Carrier {}
        }

        @Test(arguments: Setup.allCases)
        func anOperationTakesTheTracerInEffect(_ setup: Setup) async {
            await #expect(processExitsWith: .success, "\(setup)") { [setup] in
                setup.bootstrap()
                let made = {
                    HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
                }
                let operation = setup == .tracerBoundToTheTask ? withTracer(InMemoryTracer(), made) : made()
                exit((operation.tracer != nil) == setup.traces ? 0 : 1)
            }
        }
    }
}
