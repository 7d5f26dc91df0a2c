import Foundation
@testable import HTTPOperations
import HTTPTypes
import Synchronization
import Testing

extension AllTests.FullDuplex {
    /// Why a full-duplex exchange through nginx can stall, pinned down (Docs/Reliability.md,
    /// "Full-duplex campaign"). nginx 1.22's proxy module stops writing a request body to its
    /// upstream once it has passed the response head on and a write to the upstream found the
    /// socket full: from then on its write handler is `ngx_http_upstream_dummy_handler`
    /// (`ngx_http_upstream_send_request_handler`), so the bytes it holds go up only when more
    /// of the body arrives from the client, and the client is waiting for nginx to read.
    ///
    /// Here the test server answers the head, then stops reading for a second (`?hold=1000`)
    /// while the client writes 8 MiB and reads the echo. Straight to the test server the echo
    /// is complete and exact; through nginx, over HTTP/1.1 and over HTTP/2, the exchange stops
    /// moving. The test pins a third party's behaviour: should a newer nginx forward the body,
    /// it fails, and the campaign's allowance for stalls through nginx must go.
    @Test(.enabled(if: !underSanitizer, "nginx's behaviour, not ours: the plain run shows it"),
          .timeLimit(.minutes(2)), arguments: Route.allCases)
    func nginxStopsForwardingABodyOnceItsUpstreamWasFull(_ route: Route) async throws {
        let body = Self.eightMebibytes
        let progress = DuplexProbe()
        let manager = try route.manager()
        // Made before the clock starts: the first use of nginx starts it, which takes seconds.
        let url = route.url("/duplex/echo?hold=1000")
        let exchange = Task {
            try await manager.perform(HTTPRequest(method: .post, url: url),
                                      body: .restartable { writer in
                                          var offset = 0
                                          while offset < body.count {
                                              let end = min(offset + 64 << 10, body.count)
                                              try await writer.write(body[offset..<end])
                                              offset = end
                                              progress.written.store(offset, ordering: .relaxed)
                                          }
                                          return nil
                                      }) { _, stream in
                var echo = Data()
                for try await chunk in stream {
                    echo.append(chunk)
                    progress.received.store(echo.count, ordering: .relaxed)
                }
                return echo
            }
        }
        let outcome = await Self.outcomeOrStall(of: exchange, progress: progress, quietFor: .seconds(3))
        let (written, received) = (progress.written.load(ordering: .relaxed), progress.received.load(ordering: .relaxed))
        print("nginxStopsForwardingABodyOnceItsUpstreamWasFull(\(route)): \(outcome.map { _ in "an outcome" } ?? "stalled"), "
              + "\(written) of \(body.count) B written, \(received) B echoed")
        switch route {
        case .direct:
            let echo = try #require(try outcome?.get(), "no outcome straight to the test server: \(written) B written, \(received) B echoed")
            // A Bool, not `echo == body`: Swift Testing would diff 8 MiB on a failure.
            let firstDifference = zip(echo, body).enumerated().first { $1.0 != $1.1 }?.offset
            let exact = echo.count == body.count && firstDifference == nil
            #expect(exact, "an echo of \(echo.count) B for \(body.count) B written, first difference at \(String(describing: firstDifference))")
        case .nginx, .nginxHTTP2:
            #expect(outcome == nil, "nginx forwarded the whole body: the campaign's allowance for its stalls can go")
            #expect(received < body.count)
        }
    }

    /// What a caller gets from such a stall: not a hang, but `URLError(.timedOut)` once
    /// nothing moved for the request's idle timeout (`timeoutInterval`, 2 s here: curl's
    /// low-speed limit of 1 B/s over that time, counting both directions, and curl averages
    /// the speed over its last 5 s, so the error came 9 s after the start here).
    @Test(.timeLimit(.minutes(2)))
    func aStallInNginxEndsInATimeout() async throws {
        var request = URLRequest(url: Route.nginx.url("/duplex/echo?hold=1000"))
        request.httpMethod = "POST"
        request.timeoutInterval = 2
        let chunk = Data(repeating: 0x42, count: 64 << 10)
        request.httpBodyStream = StreamedRequestBody { writer in
            for _ in 0..<128 { try await writer.write(chunk) }
        }
        let started = ContinuousClock.now
        let outcome = try await run(HTTPRequestOperation(request: request), timeout: .seconds(60))
        print("aStallInNginxEndsInATimeout: \(outcome) after \(ContinuousClock.now - started)")
        #expect(outcome.urlErrorCode == .timedOut, "\(outcome)")
    }

    /// The campaign's oracle puts a stall of nginx's down to nginx: the scenario above, as a
    /// campaign scenario through nginx, hangs, is sent again straight to the test server,
    /// echoes exactly there, and is judged ``DuplexScenario/Verdict/stalledInNginx(_:)``.
    @Test(.enabled(if: !underSanitizer, "a test of the campaign's oracle: the plain run shows it"), .timeLimit(.minutes(2)))
    func theCampaignPutsAStallOfNginxDownToIt() async throws {
        var scenario = DuplexScenario(index: 0, route: .nginx, door: .httpTypes, body: Self.eightMebibytes, writeSize: 64 << 10)
        scenario.holdMilliseconds = 1000
        scenario.hangsAfter = .seconds(8)
        let managers = try Dictionary(uniqueKeysWithValues: Route.allCases.map { ($0, try $0.manager()) })
        let verdict = await scenario.judge(on: managers)
        print("theCampaignPutsAStallOfNginxDownToIt: \(verdict)")
        guard case .stalledInNginx = verdict else {
            Issue.record("judged \(verdict), not nginx's stall")
            return
        }
    }

    /// 8 MiB that depend on their position.
    static let eightMebibytes = {
        var bytes = Data(count: 8 << 20)
        bytes.withUnsafeMutableBytes { bytes in
            for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 13 &+ (index >> 9)) }
        }
        return bytes
    }()

    /// `exchange`'s result, or nil once the echo stopped growing for `quiet` (after the server's
    /// hold) with no outcome: then the exchange is cancelled.
    static func outcomeOrStall(of exchange: Task<Data, any Error>, progress: DuplexProbe,
                               quietFor quiet: Duration) async -> Result<Data, any Error>? {
        // Who ended it: 0 nobody yet, 1 the exchange (an outcome), 2 the watcher (a stall).
        let ended = Atomic<Int>(0)
        let watcher = Task {
            var last = -1, unchangedSince = ContinuousClock.now
            // A minute at most, whatever happens: a test must end.
            for _ in 0..<600 where ended.load(ordering: .relaxed) == 0 {
                try? await Task.sleep(for: .milliseconds(100))
                let now = progress.received.load(ordering: .relaxed)
                if now != last { (last, unchangedSince) = (now, .now) }
                if ContinuousClock.now - unchangedSince > quiet { break }
            }
            if ended.compareExchange(expected: 0, desired: 2, ordering: .relaxed).exchanged { exchange.cancel() }
        }
        let result = await exchange.result
        let stalled = !ended.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged
        watcher.cancel()
        // A success that came as the watcher gave up is still an outcome; a failure after the
        // watcher cancelled is the stall's.
        if stalled, case .failure = result { return nil }
        return result
    }
}

/// Whether this build runs under ThreadSanitizer or AddressSanitizer: tests of third parties'
/// behaviour and of the tests' own oracles run in the plain run only (CI's time).
#if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
let underSanitizer = true
#else
let underSanitizer = false
#endif
