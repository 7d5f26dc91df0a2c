import CoreMetrics
import Foundation
@testable import HTTPOperations
import HTTPTestServer
import MetricsTestKit
import Testing

/// What operations report to swift-metrics, read back from its test backend (never the global
/// system: each test gives its manager its own `TestMetrics`).
extension AllTests {
    @Suite struct MetricsTests {
        typealias Label = RequestMetrics.Label

        static func manager(_ metrics: TestMetrics) -> HTTPRequestOperationManager {
            let manager = HTTPRequestOperationManager()
            manager.responseSerializer = HTTPResponseSerializer()
            manager.defaultConfiguration.metricsFactory = metrics
            return manager
        }

        /// Runs `request` on `manager` and waits until it is finished (its metrics are then recorded).
        static func perform(_ request: URLRequest, on manager: HTTPRequestOperationManager) async throws -> HTTPRequestOperation {
            let op = manager.httpRequestOperation(with: request, success: nil, failure: nil)
            manager.enqueue(op)
            try await waitUntilFinished(op)
            return op
        }

        static func requests(_ metrics: TestMetrics, _ method: String, _ status: String, _ error: String) -> Int64 {
            metrics.counterTotal(label: Label.requests, dimensions: [("method", method), ("status", status), ("error", error)])
        }

        @Test func requestsAreCountedByMethodStatusClassAndKindOfError() async throws {
            let metrics = TestMetrics()
            let manager = Self.manager(metrics)
            _ = try await Self.perform(URLRequest(url: testServer.url(.bytes(100))), on: manager)
            _ = try await Self.perform(URLRequest(url: testServer.url(.bytes(100))), on: manager)
            _ = try await Self.perform(URLRequest(url: testServer.url(.status(404))), on: manager)
            var post = URLRequest(url: testServer.url(.echo))
            post.httpMethod = "POST"
            post.httpBody = Data("hello".utf8)
            _ = try await Self.perform(post, on: manager)
            var custom = URLRequest(url: testServer.url(.echo))
            custom.httpMethod = "PURGE"
            _ = try await Self.perform(custom, on: manager)
            let refused = try await Self.perform(URLRequest(url: URL(string: "http://127.0.0.1:\(try freeLoopbackPort())/")!),
                                                 on: manager)
            #expect((refused.error as? URLError)?.code == .cannotConnectToHost)

            #expect(Self.requests(metrics, "GET", "2xx", "none") == 2)
            #expect(Self.requests(metrics, "GET", "4xx", "status") == 1)
            #expect(Self.requests(metrics, "POST", "2xx", "none") == 1)
            #expect(Self.requests(metrics, "OTHER", "2xx", "none") == 1, "a method outside the list is OTHER")
            #expect(Self.requests(metrics, "GET", "none", "connect") == 1)
            // Nothing else: six requests, six counts, three dimensions on each series.
            #expect(metrics.counterTotal(label: Label.requests) == 6)
            #expect(metrics.counters(label: Label.requests).allSatisfy { $0.dimensions.map(\.0) == ["method", "status", "error"] })
        }

        @Test func aCancellationIsCountedAsOne() async throws {
            let metrics = TestMetrics()
            let manager = Self.manager(metrics)
            let op = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.delay(milliseconds: 5_000))),
                                                  success: nil, failure: nil)
            let (started, observer) = notificationSignal(.networkingOperationDidStart, of: op)
            defer { NotificationCenter.default.removeObserver(observer) }
            manager.enqueue(op)
            try await started.wait()
            op.cancel()
            try await waitUntilFinished(op)
            #expect(Self.requests(metrics, "GET", "none", "cancelled") == 1)
            #expect(metrics.counterTotal(label: Label.requests) == 1)
        }

        @Test func durationAndTimeToFirstByteAreTimedPerMethod() async throws {
            let metrics = TestMetrics()
            let manager = Self.manager(metrics)
            for _ in 0..<3 {
                _ = try await Self.perform(URLRequest(url: testServer.url(.delay(milliseconds: 50))), on: manager)
            }
            let duration = try metrics.expectTimer(Label.duration, [("method", "GET")])
            let firstByte = try metrics.expectTimer(Label.timeToFirstByte, [("method", "GET")])
            #expect(duration.values.count == 3 && firstByte.values.count == 3)
            // The server waits 50 ms before its head: both include it; the first byte comes no later than the end.
            for (total, first) in zip(duration.values, firstByte.values) {
                #expect(first >= 50_000_000 && total >= first, "first byte \(first) ns, total \(total) ns")
            }
        }

        @Test func theInFlightMeterCountsExecutingOperationsNotPausedOnesAndReturnsToZero() async throws {
            let metrics = TestMetrics()
            let manager = Self.manager(metrics)
            let ops = (0..<4).map { _ in
                manager.httpRequestOperation(with: URLRequest(url: testServer.url(.delay(milliseconds: 3_000))), success: nil, failure: nil)
            }
            let signals = ops.map { notificationSignal(.networkingOperationDidStart, of: $0) }
            defer { for (_, observer) in signals { NotificationCenter.default.removeObserver(observer) } }
            for op in ops { manager.enqueue(op) }
            for (started, _) in signals { try await started.wait() }
            let meter = try metrics.expectMeter(Label.inFlight)
            #expect(meter.lastValue == 4)
            let paused = TestSignal("pause")
            ops[0].pause { paused.fire() }
            try await paused.wait()
            #expect(meter.lastValue == 3, "a paused operation is not in flight")
            ops[0].resume()
            #expect(meter.lastValue == 4)
            ops[1].cancel()
            for op in ops { try await waitUntilFinished(op) }
            #expect(meter.lastValue == 0)
            // Every step was one up or one down: 4 up, pause, resume, 4 down.
            #expect(meter.values.count == 10, "\(meter.values)")
        }

        @Test func bytesRetriesResumesAndConnectionReuseAreCounted() async throws {
            let metrics = TestMetrics()
            let manager = Self.manager(metrics)
            // Two GETs one after the other: the second rides the first one's connection (a
            // server of its own: libcurl may keep connections other tests opened to the shared one).
            let server = try TestServer.start()
            defer { server.shutdown() }
            _ = try await Self.perform(URLRequest(url: server.url(.bytes(1_000))), on: manager)
            _ = try await Self.perform(URLRequest(url: server.url(.bytes(1_000))), on: manager)
            #expect(metrics.counterTotal(label: Label.bytesReceived) == 2_000)
            #expect(metrics.counterTotal(label: Label.transfers, dimensions: [("connection", "new")]) == 1)
            #expect(metrics.counterTotal(label: Label.transfers, dimensions: [("connection", "reused")]) == 1)

            var post = URLRequest(url: testServer.url(.upload))
            post.httpMethod = "POST"
            post.httpBody = Data(count: 5_000)
            _ = try await Self.perform(post, on: manager)
            #expect(metrics.counterTotal(label: Label.bytesSent) == 5_000)

            // Two 503s, then the body: two retries.
            let key = "flaky-\(UUID().uuidString)"
            let flaky = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.flaky(key: key, failures: 2, status: 503,
                                                                                                  retryAfter: "0", count: 100))),
                                                     success: nil, failure: nil)
            var policy = RetryPolicy.transientFailures
            policy.initialDelay = 0.01
            flaky.retryPolicy = policy
            manager.enqueue(flaky)
            try await waitUntilFinished(flaky)
            #expect(flaky.error == nil)
            #expect(metrics.counterTotal(label: Label.retries) == 2)

            // A download dropped at 300,000 bytes continues with Range: one resume.
            var options = ResumableOptions()
            options.dropAfter = 300_000
            let file = temporaryFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let download = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.resumable(size: 1_000_000, options: options))),
                                                        success: nil, failure: nil)
            download.destinationURL = file
            manager.enqueue(download)
            try await waitUntilFinished(download)
            #expect(download.error == nil)
            #expect(metrics.counterTotal(label: Label.resumes) == Int64(download.downloadMetrics.resumes))
            #expect(download.downloadMetrics.resumes >= 1)
        }

        @Test func withoutABackendNothingIsMadeAndNothingIsReported() {
            #expect(RequestMetrics(factory: NOOPMetricsHandler.instance) == nil)
            let manager = HTTPRequestOperationManager()
            // No test bootstraps the global system: its factory is the no-op one.
            #expect(manager.defaultConfiguration.metricsFactory == nil)
            let op = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(1))), success: nil, failure: nil)
            #expect(op.configuration.metricsFactory == nil)
            let metrics = TestMetrics()
            manager.defaultConfiguration.metricsFactory = metrics
            let later = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(1))), success: nil, failure: nil)
            #expect(later.configuration.metricsFactory as? TestMetrics === metrics)
        }

        @Test func dimensionValuesComeFromShortFixedLists() {
            #expect(MetricDimensions.method("get") == "GET")
            #expect(MetricDimensions.method("BREW") == "OTHER")
            #expect(MetricDimensions.method(nil) == "GET")
            #expect(MetricDimensions.statusClass(204) == "2xx")
            #expect(MetricDimensions.statusClass(599) == "5xx")
            #expect(MetricDimensions.statusClass(999) == "none")
            #expect(MetricDimensions.statusClass(nil) == "none")
            #expect(MetricDimensions.errorKind(URLError(.timedOut)) == "timeout")
            #expect(MetricDimensions.errorKind(URLError(.cannotFindHost)) == "dns")
            #expect(MetricDimensions.errorKind(URLError(.serverCertificateUntrusted)) == "tls")
            #expect(MetricDimensions.errorKind(URLError(.badServerResponse)) == "transport")
            #expect(MetricDimensions.errorKind(TransferError(.bodyTooLarge, url: nil, detail: "")) == "transfer")
            #expect(MetricDimensions.errorKind(CocoaError(.fileNoSuchFile)) == "other")
        }
    }
}
