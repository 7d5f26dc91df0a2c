import Foundation
@testable import HTTPOperations
import HTTPTypes
import Synchronization
import Testing

extension AllTests.FullDuplex {
    /// The property "a written body arrives exactly, or the request fails with a typed
    /// error", over scenarios drawn from a seed.
    ///
    /// Each scenario sends a body of 0 B to 4 MiB (bytes that depend on their position, so a
    /// byte lost, repeated or moved shows) to `/duplex/echo`, which streams each chunk back
    /// as it arrives: over the test server, nginx (HTTP/1.1) or nginx (HTTP/2); through the
    /// HTTPTypes door (the response read while the body is written) or the operation door
    /// (a `StreamedRequestBody`, the response collected); in writes of 1 byte to 300 KB taken
    /// as `Data` slices; with or without a declared length; with pauses in the writer and in
    /// the reader (so the sending and the receiving side of curl each pause and resume while
    /// the other runs). One scenario in five is an adversity: the writer throws at a random
    /// write, or its declared length is one byte more or less than it writes.
    ///
    /// The oracle: without adversity, success with status 200 and the echo equal to the body,
    /// byte for byte; with one, a failure with `URLError(.requestBodyStreamExhausted)`, never
    /// a success, with one exception the protocol makes: a writer that writes past its
    /// declared length after the whole declared body was sent may find the answer complete
    /// already (the server had every byte it was promised). That success must then echo
    /// exactly the declared bytes, and the write past them must have thrown.
    ///
    /// A scenario with no outcome and no byte moved for 30 s is a hang, and a violation, with one exception that
    /// is nginx's: its proxy stops forwarding a full-duplex body once the response head went
    /// on and its upstream's socket was full (pinned down by
    /// ``nginxStopsForwardingABodyOnceItsUpstreamWasFull(_:)``). A hang through nginx that
    /// could be nginx's (``DuplexScenario/mayStallInNginx(received:)``) is sent again straight
    /// to the test server, by the same door with the same writes; if that gets the exact
    /// outcome it is counted as nginx's stall, printed and recorded as a known issue,
    /// otherwise it is a violation, as is every other hang. Violations are counted and the
    /// first ones printed with the seed; the test fails when there is any, or when more than
    /// a quarter of the scenarios that could stall in nginx did.
    ///
    /// `HTTPOPERATIONS_SEED` replays a campaign, `HTTPOPERATIONS_DUPLEX_SCENARIO=<n>` one
    /// scenario of it; `HTTPOPERATIONS_DUPLEX_SCENARIOS` sets the count (160 here, 30 under a sanitizer).
    @Test(.timeLimit(.minutes(10)))
    func writtenBodiesArriveExactly() async throws {
        var generator = SeededGenerator(for: "writtenBodiesArriveExactly")
        let count = ProcessInfo.processInfo.environment["HTTPOPERATIONS_DUPLEX_SCENARIOS"].flatMap(Int.init) ?? {
            #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
            return 30
            #else
            // 160 rather than 240 since 2026-11-26, for CI's time (114 s for 240 there).
            return 160
            #endif
        }()
        var scenarios = (0..<count).map { DuplexScenario(index: $0, using: &generator) }
        // One scenario of the campaign alone, to look at it.
        if let only = ProcessInfo.processInfo.environment["HTTPOPERATIONS_DUPLEX_SCENARIO"].flatMap(Int.init) {
            scenarios = scenarios.filter { $0.index == only }
        }
        let managers = try Dictionary(uniqueKeysWithValues: Route.allCases.map { ($0, try $0.manager()) })
        let findings = Mutex<(violations: [String], nginxStalls: [String])>(([], []))
        // Four at a time: the network thread interleaves their pauses and resumptions.
        await withTaskGroup(of: DuplexScenario.Verdict.self) { group in
            func record(_ verdict: DuplexScenario.Verdict) {
                findings.withLock { findings in
                    switch verdict {
                    case .kept: break
                    case .violated(let violation): findings.violations.append(violation)
                    case .stalledInNginx(let stall): findings.nginxStalls.append(stall)
                    }
                }
            }
            for (position, scenario) in scenarios.enumerated() {
                if position >= 4, let verdict = await group.next() { record(verdict) }
                group.addTask { await scenario.judge(on: managers) }
            }
            for await verdict in group { record(verdict) }
        }
        let (found, nginxStalls) = findings.withLock { $0 }
        // The scenarios whose hang could be nginx's stall if they hung.
        let couldStall = scenarios.filter { $0.mayStallInNginx(received: 1) }.count
        print("writtenBodiesArriveExactly: \(count) scenarios, \(found.count) violations, \(nginxStalls.count) stalls of nginx's "
              + "proxy of \(couldStall) that could stall (each sent straight to the test server afterwards: exact) (seed \(generator.seed))")
        for finding in (found + nginxStalls).prefix(5) { print("  \(finding)") }
        #expect(found.isEmpty, "\(found.count) violations; replay with HTTPOPERATIONS_SEED=\(generator.seed)")
        // More stalls than nginx explains point at us: before this oracle, about 3 campaigns in 10
        // had one, of about 24 scenarios in 240 that could stall (one in ten).
        #expect(nginxStalls.count <= max(1, couldStall / 4), "\(nginxStalls.count) of \(couldStall) scenarios stalled through nginx")
        // Each stall stays visible in the results, as nginx's known issue.
        withKnownIssue("nginx's proxy stopped forwarding a full-duplex body (Docs/Reliability.md)", isIntermittent: true) {
            for stall in nginxStalls { Issue.record("\(stall)") }
        }
    }
}

/// One scenario of ``AllTests/FullDuplex/writtenBodiesArriveExactly()``.
struct DuplexScenario: Sendable, CustomStringConvertible {
    enum Door: Sendable { case httpTypes, operation }
    enum Adversity: Sendable, Equatable { case none, throwsAtWrite(Int), declaresMore, declaresLess }

    let index: Int
    private(set) var route: AllTests.FullDuplex.Route
    let door: Door
    let body: Data
    /// The size of each write, in order; they add up to `body.count`.
    let writes: [Int]
    let declaresLength: Bool
    let adversity: Adversity
    /// Writes after which the writer sleeps a millisecond.
    let writerPauses: Set<Int>
    /// The reader sleeps a millisecond after one chunk in this many (0: never).
    let readerPauseEvery: Int
    /// How long the test server stops reading after answering the head (`?hold=`), in ms:
    /// 0 in the campaign, more to make nginx stall on purpose.
    var holdMilliseconds = 0
    /// How long with no outcome and no byte moved (written, taken by curl or received) makes a
    /// hang. A slow exchange that still moves is not one: under ThreadSanitizer, on 2 shared
    /// cores, a 4 MB body in 480,000 writes still moving at 30 s was once called a hang.
    var hangsAfter: Duration = .seconds(30)

    /// The smallest body a stall of nginx's proxy is put down to: it needs the socket to the
    /// test server full once after the head went on (hundreds of KiB on loopback).
    static let smallestStalledBody = 1 << 20

    init(index: Int, using generator: inout SeededGenerator) {
        self.index = index
        route = [.direct, .direct, .nginx, .nginxHTTP2].randomElement(using: &generator)!
        door = Bool.random(using: &generator) ? .httpTypes : .operation
        let size = switch Int.random(in: 0..<10, using: &generator) {
        case 0: 0
        case 1...3: Int.random(in: 1...100, using: &generator)
        case 4...6: Int.random(in: 101...(64 << 10), using: &generator)
        default: Int.random(in: (64 << 10)...(4 << 20), using: &generator)
        }
        let salt = UInt8.random(in: 0...255, using: &generator)
        body = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ ($0 >> 8) &+ Int(salt)) })
        let largest = [16, 4096, 300_000].randomElement(using: &generator)!
        var writes: [Int] = []
        var left = size
        while left > 0 {
            let write = Int.random(in: 1...min(left, largest), using: &generator)
            writes.append(write)
            left -= write
        }
        self.writes = writes
        declaresLength = Bool.random(using: &generator)
        adversity = switch Int.random(in: 0..<15, using: &generator) {
        case 0 where !writes.isEmpty: .throwsAtWrite(Int.random(in: 0..<writes.count, using: &generator))
        case 1 where declaresLength: .declaresMore
        case 2 where declaresLength && size > 0: .declaresLess
        default: .none
        }
        let pauses = writes.count < 200 ? Int.random(in: 0...min(writes.count, 20), using: &generator) : 0
        writerPauses = Set((0..<pauses).map { _ in Int.random(in: 0..<max(writes.count, 1), using: &generator) })
        readerPauseEvery = [0, 0, 1, 10].randomElement(using: &generator)!
    }

    /// A scenario given outright, without adversity or pauses: `body` in writes of
    /// `writeSize` bytes, chunked.
    init(index: Int, route: AllTests.FullDuplex.Route, door: Door, body: Data, writeSize: Int) {
        self.index = index
        self.route = route
        self.door = door
        self.body = body
        writes = stride(from: 0, to: body.count, by: writeSize).map { min(writeSize, body.count - $0) }
        declaresLength = false
        adversity = .none
        writerPauses = []
        readerPauseEvery = 0
    }

    /// Whether a hang of this scenario through nginx can be nginx's stall: through nginx,
    /// without adversity (a writer that throws or lies about its length must end in an
    /// error, whatever the proxy does), large enough to fill the proxy's socket to the test
    /// server, and with some of the echo received (nginx had passed the response head on).
    func mayStallInNginx(received: Int) -> Bool {
        route != .direct && adversity == .none && body.count >= Self.smallestStalledBody && received > 0
    }

    var description: String {
        "\(route), \(door), \(body.count) B in \(writes.count) writes, length \(declaresLength ? "declared" : "chunked"), "
            + "\(adversity), \(writerPauses.count) writer pauses, reader pause every \(readerPauseEvery)"
    }

    struct WriterBroke: Error {}

    /// What the writer declares and writes.
    private var declaredLength: Int64? {
        guard declaresLength else { return nil }
        switch adversity {
        case .declaresMore: return Int64(body.count + 1)
        case .declaresLess: return Int64(body.count - 1)
        default: return Int64(body.count)
        }
    }

    private func write(to writer: RequestBodyWriter, probe refused: DuplexProbe) async throws {
        var offset = 0
        for (position, size) in writes.enumerated() {
            if adversity == .throwsAtWrite(position) { throw WriterBroke() }
            do {
                try await writer.write(body[offset..<(offset + size)])
            } catch {
                refused.end.withLock { $0 = offset + size }
                throw error
            }
            offset += size
            refused.written.store(offset, ordering: .relaxed)
            if writerPauses.contains(position) { try await Task.sleep(for: .milliseconds(1)) }
        }
    }

    /// What a scenario showed.
    enum Verdict: Sendable {
        /// The oracle held.
        case kept
        /// The oracle did not hold: what happened instead.
        case violated(String)
        /// No outcome through nginx, and exactly the echo when sent straight to the test server
        /// afterwards: nginx's proxy stopped forwarding the body (see
        /// ``AllTests/FullDuplex/nginxStopsForwardingABodyOnceItsUpstreamWasFull(_:)``).
        case stalledInNginx(String)
    }

    /// Runs the scenario on its route's manager and judges it. A hang through nginx is run
    /// again straight to the test server, by the same door with the same writes: nginx's
    /// proxy is known to stall full-duplex bodies (it stops writing one to its upstream once
    /// the response head went on and the upstream's socket was full), so the hang is put down
    /// to nginx only when our client, sent the same scenario without nginx, gets the exact
    /// outcome. Any other hang, and any wrong byte, is a violation.
    ///
    /// What this cannot tell apart: a hang of our client that only nginx brings out, the
    /// direct route (plain HTTP/1.1) never does, and hits a large exchange only. A fault of
    /// HTTP/2 or TLS in our client would show in the smaller scenarios through nginx, which
    /// are never put down to it; the campaign also fails when more than a quarter of the
    /// scenarios that could stall in nginx do.
    func judge(on managers: [AllTests.FullDuplex.Route: HTTPRequestOperationManager]) async -> Verdict {
        guard let (violation, hang) = await run(on: managers[route]!) else { return .kept }
        let described = "scenario \(index) (\(self)): \(violation)"
        guard let hang, mayStallInNginx(received: hang.received.load(ordering: .relaxed)) else { return .violated(described) }
        var straight = self
        straight.route = .direct
        straight.holdMilliseconds = 0
        if let (straightViolation, _) = await straight.run(on: managers[.direct]!) {
            return .violated(described + "; sent straight to the test server: \(straightViolation)")
        }
        return .stalledInNginx(described)
    }

    /// Runs the scenario; returns the violation of the oracle, if any, and, when it was a
    /// hang, where the hung exchange stood.
    func run(on manager: HTTPRequestOperationManager) async -> (violation: String, hang: DuplexProbe?)? {
        let refused = DuplexProbe()
        let result = await withDeadline(hangsAfter, unless: refused.moved) { try await send(on: manager, probe: refused) }
        guard let result else {
            // Where it stood, for whoever reads the failure. curl's count is seen through the
            // operation door only (its progress block is set before the operation starts).
            let sent = door == .operation ? "curl took \(refused.sent.load(ordering: .relaxed)) B, " : ""
            return ("no outcome, and no byte moved for \(hangsAfter) (a hang): the writer wrote \(refused.written.load(ordering: .relaxed)) B, \(sent)"
                + "\(refused.received.load(ordering: .relaxed)) B were received", refused)
        }
        return verdict(of: result, probe: refused).map { ($0, nil) }
    }

    /// The violation of the oracle by `result`, if any.
    private func verdict(of result: Result<Data, any Error>, probe refused: DuplexProbe) -> String? {
        switch (result, adversity) {
        case (.success(let echo), .none):
            return echo == body ? nil : "echo of \(echo.count) B differs from the \(body.count) B written"
                + (echo.count == body.count ? " (first difference at \(zip(echo, body).enumerated().first { $1.0 != $1.1 }!.offset))" : "")
        case (.success(let echo), .declaresLess):
            // The declared bytes all went and were answered before the extra write came.
            let declared = body.count - 1
            guard echo == body.prefix(declared) else { return "a success echoing \(echo.count) B, not the \(declared) B declared" }
            guard let refusedEnd = refused.end.withLock({ $0 }), refusedEnd > declared else {
                return "a success (\(echo.count) B echoed) and the write past the declared length was not refused"
            }
            return nil
        case (.success(let echo), _):
            return "a success (\(echo.count) B echoed) despite the adversity"
        case (.failure(let error), .none):
            return "failed: \(error)"
        case (.failure(let error), _):
            return (error as? URLError)?.code == .requestBodyStreamExhausted ? nil : "failed with \(error), not requestBodyStreamExhausted"
        }
    }

    private func send(on manager: HTTPRequestOperationManager, probe refused: DuplexProbe) async throws -> Data {
        let url = route.url(holdMilliseconds > 0 ? "/duplex/echo?hold=\(holdMilliseconds)" : "/duplex/echo")
        switch door {
        case .httpTypes:
            let body = HTTPRequestBody.restartable(knownLength: declaredLength) { writer in
                try await write(to: writer, probe: refused)
                return nil
            }
            return try await manager.perform(HTTPRequest(method: .post, url: url), body: body) { response, stream in
                guard response.status == .ok else { throw URLError(.badServerResponse) }
                var echo = Data(), chunks = 0
                for try await chunk in stream {
                    echo.append(chunk)
                    refused.received.store(echo.count, ordering: .relaxed)
                    chunks += 1
                    if readerPauseEvery > 0, chunks % readerPauseEvery == 0 { try await Task.sleep(for: .milliseconds(1)) }
                }
                return echo
            }
        case .operation:
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.httpBodyStream = StreamedRequestBody(length: declaredLength) { writer in try await write(to: writer, probe: refused) }
            let operation = manager.httpRequestOperation(with: request, success: nil, failure: nil)
            operation.responseSerializer = HTTPResponseSerializer()
            operation.setUploadProgressBlock { _, total, _ in refused.sent.store(Int(total), ordering: .relaxed) }
            operation.setDownloadProgressBlock { _, total, _ in refused.received.store(Int(total), ordering: .relaxed) }
            _ = try await manager.run(operation, as: Data.self)
            return operation.responseData ?? Data()
        }
    }
}

/// What one scenario did so far: where the write `write` refused ended (its offset plus its
/// size), if one was; the bytes written, taken by curl (the operation door's progress) and
/// received (for a hang's report).
final class DuplexProbe: Sendable {
    let end = Mutex<Int?>(nil)
    let written = Atomic<Int>(0)
    let sent = Atomic<Int>(0)
    let received = Atomic<Int>(0)

    /// Every byte counted so far, written, taken and received: it grows while the exchange moves.
    @Sendable func moved() -> Int {
        written.load(ordering: .relaxed) + sent.load(ordering: .relaxed) + received.load(ordering: .relaxed)
    }
}

/// `work`'s result, or nil when it did not finish and `progress` stood still for `limit` (it is
/// cancelled then). `progress` is read every half second.
func withDeadline<Value: Sendable>(_ limit: Duration, unless progress: @escaping @Sendable () -> Int,
                                   _ work: @escaping @Sendable () async throws -> Value) async -> Result<Value, any Error>? {
    await withTaskGroup(of: Result<Value, any Error>?.self) { group in
        group.addTask {
            do { return .success(try await work()) } catch { return .failure(error) }
        }
        group.addTask {
            var last = progress()
            var stillSince = ContinuousClock.now
            while ContinuousClock.now - stillSince < limit {
                try? await Task.sleep(for: .milliseconds(500))
                if Task.isCancelled { return nil }
                let now = progress()
                if now != last { last = now; stillSince = .now }
            }
            return nil
        }
        let first = await group.next()!
        group.cancelAll()
        return first
    }
}
