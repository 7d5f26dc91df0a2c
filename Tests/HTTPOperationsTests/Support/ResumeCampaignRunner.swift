import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Equipment

/// The campaign's servers, one set per process: the adversarial server, TLS in front of it,
/// and the proxy.
final class CampaignServers: Sendable {
    let server: AdversarialResumeServer
    let tls: TLSRelay
    let proxy: CampaignProxy
    let securityPolicy: SecurityPolicy
    let proxyRoute: NetworkRoute

    static let shared: CampaignServers = {
        do {
            return try CampaignServers()
        } catch {
            fatalError("the campaign's servers did not start: \(error)")
        }
    }()

    private init() throws {
        server = try AdversarialResumeServer.start()
        tls = try TLSRelay.start(forwardingTo: server.port)
        proxy = try CampaignProxy.start()
        securityPolicy = try SecurityPolicy(trustedCertificateAuthorities: [
            TLSCertificate(derEncoded: TestCertificates.shared.root.certificateDER),
        ])
        proxyRoute = NetworkRoute(proxy: .proxy(try Proxy(proxy.url)))
    }

    func url(_ scenario: CampaignScenario, path: String? = nil) -> URL {
        let path = path ?? AdversarialResumeServer.path(of: scenario.resource.key)
        if scenario.route == .http2ThroughNginx, let front = CampaignHTTP2Front.shared {
            return URL(string: "https://127.0.0.1:\(front.port)\(path)")!
        }
        return scenario.route.isTLS
            ? URL(string: "https://127.0.0.1:\(tls.port)\(path)")!
            : URL(string: "http://127.0.0.1:\(server.port)\(path)")!
    }

    func configure(_ operation: HTTPRequestOperation, for route: CampaignScenario.Route) {
        switch route {
        case .http, .https, .http2ThroughNginx: operation.route = NetworkRoute(proxy: .direct)
        case .httpThroughProxy, .httpsThroughConnect: operation.route = proxyRoute
        case .httpsThroughEnvironmentProxy, .httpDefaultRoute: operation.route = .default
        }
        if route.isTLS { operation.securityPolicy = securityPolicy }
    }
}

/// Fires once; waiting for it gives up after a timeout (a dispatch timer, no task left behind).
final class CampaignLatch: Sendable {
    private struct State {
        var fired = false
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    var hasFired: Bool { state.withLock { $0.fired } }

    /// True when it fired within `timeout`.
    func wait(timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = state.withLock { state -> Int? in
                guard !state.fired else { return nil }
                state.next += 1
                state.waiters[state.next] = continuation
                return state.next
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            let (seconds, attoseconds) = timeout.components
            let interval = Double(seconds) + Double(attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + interval) {
                let expired = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                expired?.resume(returning: false)
            }
        }
    }
}

/// Runs the watchers that tell when an operation is finished.
private let campaignWatchers: OperationQueue = {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 64
    return queue
}()

/// Starts the campaign's operations that have no manager.
private let campaignQueue: OperationQueue = {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 256
    return queue
}()

/// True once `operation` is finished, within `timeout`.
func campaignWaitUntilFinished(_ operation: Operation, timeout: Duration) async -> Bool {
    let latch = CampaignLatch()
    let watcher = BlockOperation { latch.fire() }
    watcher.addDependency(operation)
    campaignWatchers.addOperation(watcher)
    return await latch.wait(timeout: timeout)
}

// MARK: - What a campaign counts

/// Everything a campaign (or one child process of it) counted. Codable: a child process
/// sends its tally to the test on its standard output.
struct CampaignTally: Codable, Sendable {
    struct Violation: Codable, Sendable {
        var scenario: Int
        var seed: UInt64
        var run: Int
        var kind: String
        var detail: String
        var plan: String
        var serverLog: [String]
    }

    var scenarios = 0
    var runs = 0
    /// How each run ended: "success" or the error's type and code.
    var runOutcomes: [String: Int] = [:]
    /// How each scenario ended (its last run).
    var scenarioOutcomes: [String: Int] = [:]
    var violations = 0
    var violationKinds: [String: Int] = [:]
    var firstViolations: [Violation] = []
    /// What the clients did (pauses taken, restarts, shutdowns) and what the library counted
    /// (automatic resumes, restarts from zero).
    var events: [String: Int] = [:]
    /// What the server answered and the proxy carried.
    var coverage: [String: Int] = [:]
    /// Counted, not failures: a sidecar left beside a complete, consistent file.
    var notes: [String: Int] = [:]
    var seconds = 0.0

    /// Violations described in full: the first few of each kind, up to a total.
    static let reportedViolations = 30
    static let reportedPerKind = 3

    mutating func merge(_ other: CampaignTally) {
        scenarios += other.scenarios
        runs += other.runs
        runOutcomes.merge(other.runOutcomes, uniquingKeysWith: +)
        scenarioOutcomes.merge(other.scenarioOutcomes, uniquingKeysWith: +)
        violations += other.violations
        violationKinds.merge(other.violationKinds, uniquingKeysWith: +)
        for violation in other.firstViolations where firstViolations.count < Self.reportedViolations
            && firstViolations.filter({ $0.kind == violation.kind }).count < Self.reportedPerKind {
            firstViolations.append(violation)
        }
        events.merge(other.events, uniquingKeysWith: +)
        coverage.merge(other.coverage, uniquingKeysWith: +)
        notes.merge(other.notes, uniquingKeysWith: +)
    }

    /// A violation that belongs to no one scenario (a child process that died).
    mutating func record(kind: String, detail: String) {
        violations += 1
        violationKinds[kind, default: 0] += 1
        firstViolations.append(Violation(scenario: -1, seed: 0, run: 0, kind: kind, detail: detail, plan: "", serverLog: []))
    }

    /// Counts a violation; describes it (`detail` and `serverLog` are evaluated) only when it
    /// is among the first few of its kind.
    mutating func record(_ scenario: CampaignScenario, run: Int, kind: String, detail: () -> String, serverLog: () -> [String]) {
        violations += 1
        violationKinds[kind, default: 0] += 1
        if firstViolations.count < Self.reportedViolations,
           firstViolations.filter({ $0.kind == kind }).count < Self.reportedPerKind {
            firstViolations.append(Violation(scenario: scenario.index, seed: scenario.seed, run: run + 1, kind: kind, detail: detail(),
                                             plan: scenario.description, serverLog: serverLog()))
        }
    }

    /// A table of counts, largest first.
    static func table(_ counts: [String: Int], indent: String = "    ") -> String {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\(indent)\($0.value)\t\($0.key)" }.joined(separator: "\n")
    }

    var summary: String {
        var text = "\(scenarios) scenarios, \(runs) runs, \(violations) violations, \(String(format: "%.1f", seconds)) s\n"
        text += "  scenario outcomes:\n" + Self.table(scenarioOutcomes) + "\n"
        text += "  run outcomes:\n" + Self.table(runOutcomes) + "\n"
        text += "  events:\n" + Self.table(events) + "\n"
        text += "  server answers and proxy connections:\n" + Self.table(coverage) + "\n"
        if !notes.isEmpty { text += "  notes (not violations):\n" + Self.table(notes) + "\n" }
        if violations > 0 { text += "  violations by kind:\n" + Self.table(violationKinds) + "\n" }
        return text
    }

    func describeViolations() -> String {
        firstViolations.enumerated().map { number, violation in
            violation.scenario < 0 ? "violation example \(number + 1) (of \(violations) violations): [\(violation.kind)] \(violation.detail)" :
            "violation example \(number + 1) (of \(violations) violations): [\(violation.kind)] scenario \(violation.scenario), seed \(violation.seed), run \(violation.run)\n"
                + "  \(violation.detail)\n" + violation.plan + "\n  server log:\n"
                + violation.serverLog.map { "    " + $0 }.joined(separator: "\n")
        }.joined(separator: "\n\n")
    }
}

// MARK: - The oracle

/// Judges what a run left against every version the resource had: a success is exactly one
/// version; a failure holds a true prefix of one, and the resume state (sidecar, `resumeData`)
/// names that version and no more bytes than are held.
struct CampaignOracle {
    let versions: [AdversarialVersion]
    private var contents: [UInt64: [UInt8]] = [:]

    init(versions: [AdversarialVersion]) {
        self.versions = versions
        var longest: [UInt64: Int] = [:]
        for version in versions { longest[version.contentKey] = max(longest[version.contentKey] ?? 0, version.length) }
        for (key, length) in longest { contents[key] = AdversarialVersion.bytes(key: key, offset: 0, count: length) }
    }

    /// How many leading bytes of `data` agree with `version`.
    func agreement(_ data: Data, _ version: AdversarialVersion) -> Int {
        let content = contents[version.contentKey] ?? []
        let count = min(data.count, version.length)
        return data.withUnsafeBytes { held in
            content.withUnsafeBytes { real in
                if count > 0, memcmp(held.baseAddress!, real.baseAddress!, count) == 0 { return count }
                var index = 0
                while index < count, held[index] == real[index] { index += 1 }
                return index
            }
        }
    }

    func isPrefix(_ data: Data, of version: AdversarialVersion) -> Bool {
        data.count <= version.length && agreement(data, version) == data.count
    }

    func isWhole(_ data: Data, _ version: AdversarialVersion) -> Bool {
        data.count == version.length && isPrefix(data, of: version)
    }

    /// The versions `data` is a prefix of.
    func prefixes(_ data: Data) -> [Int] { versions.indices.filter { isPrefix(data, of: versions[$0]) } }

    /// How many trailing bytes of `data` agree with `version` at the same offsets.
    func trailingAgreement(_ data: Data, _ version: AdversarialVersion) -> Int {
        let content = contents[version.contentKey] ?? []
        var count = 0
        var index = min(data.count, version.length) - 1
        guard index == data.count - 1 else { return 0 }
        while index >= 0, data[data.startIndex + index] == content[index] {
            count += 1
            index -= 1
        }
        return count
    }

    /// How `data` compares with each version, for a report: how many bytes agree from the
    /// start, and (a splice) how many at the end.
    func describe(_ data: Data) -> String {
        "\(data.count) B held; " + versions.indices.map { index in
            let version = versions[index]
            let head = agreement(data, version)
            let tail = head == data.count ? 0 : trailingAgreement(data, version)
            return "v\(index) (\(version.length) B, \(version.entityTag ?? "no ETag"), \(version.lastModified ?? "no date")): "
                + "first \(head) B agree" + (tail > 0 ? ", and the last \(tail) B (from offset \(data.count - tail))" : "")
        }.joined(separator: "; ") + (shiftedMatch(data).map { "; all of it is v\($0.0)'s bytes from offset \($0.1)" } ?? "")
    }

    /// Whether `data` begins with an error answer's body (3 bytes of it at least, or fewer
    /// followed by a version's bytes at their own offsets) and goes on past it: a resume that
    /// took the error page for held bytes.
    func startsWithErrorAnswerBody(_ data: Data) -> Bool {
        let bytes = [UInt8](data.prefix(64))
        let common = Self.errorAnswerBodies.map { body in zip(bytes, body.utf8).prefix { $0 == $1 }.count }.max() ?? 0
        if common >= 3 { return true }
        guard common > 0, data.count > common else { return false }
        // A byte or two of an error page, then a version's bytes at their own offsets.
        let end = min(data.count, common + 8)
        return versions.contains { version in
            let content = contents[version.contentKey] ?? []
            return end <= version.length && Array(data[(data.startIndex + common)..<(data.startIndex + end)]) == Array(content[common..<end])
        }
    }

    static let errorAnswerBodies = ["range not satisfiable\n", "no such resource\n", "bad request\n"]
        + [202, 203, 403, 404, 408, 410, 429, 500, 502, 503, 504].map { "status \($0) from the campaign\n" }

    /// What `data`, which is no whole version, looks like, for the kind of a violation.
    func shape(_ data: Data) -> String {
        if !prefixes(data).isEmpty { return "a true prefix, short" }
        if Self.isErrorAnswerBody(data) { return "an error answer's body" }
        if startsWithErrorAnswerBody(data) { return "an error answer's body, then other bytes" }
        for first in versions {
            let head = agreement(data, first)
            guard head > 0 else { continue }
            if versions.contains(where: { $0 != first && head + trailingAgreement(data, $0) >= data.count }) {
                return "two versions spliced"
            }
        }
        if shiftedMatch(data) != nil { return "a version's bytes at another offset" }
        return "foreign bytes"
    }

    /// A version whose bytes from some offset other than 0 are all of `data`.
    func shiftedMatch(_ data: Data) -> (Int, Int)? {
        guard data.count >= 16 else { return nil }
        let probe = [UInt8](data.prefix(16))
        let all = [UInt8](data)
        for (index, version) in versions.enumerated() where version.length > data.count {
            let content = contents[version.contentKey] ?? []
            var offset = 1
            while offset + data.count <= version.length {
                if content[offset] == probe[0], Array(content[offset..<(offset + 16)]) == probe,
                   Array(content[offset..<(offset + data.count)]) == all {
                    return (index, offset)
                }
                offset += 1
            }
        }
        return nil
    }

    /// Whether `data` is the start of a body the server sends with an error answer.
    static func isErrorAnswerBody(_ data: Data) -> Bool {
        guard !data.isEmpty else { return false }
        let text = String(decoding: data, as: UTF8.self)
        return errorAnswerBodies.contains { $0.hasPrefix(text) }
    }

    /// Why `state` does not name `version` (nil when it does).
    func mismatch(_ state: ResumeData, _ version: AdversarialVersion) -> String? {
        switch state.validator {
        case .entityTag(let tag)?: if tag != version.entityTag { return "validator ETag \(tag)" }
        case .lastModified(let date)?: if date != version.lastModified { return "validator date \(date)" }
        case nil: break
        }
        // Weakly (RFC 9110 §8.8.3.2): a server may send a version's strong tag weakened (a
        // gzipped answer, a transforming proxy), and the state then names it as it came.
        // Only that way round: a weak tag named as strong would be a client's defect.
        if let tag = state.entityTag, tag != version.entityTag, version.entityTag.map({ "W/" + $0 }) != tag {
            return "entityTag \(tag)"
        }
        if let date = state.lastModified, date != version.lastModified { return "lastModified \(date)" }
        if let length = state.expectedLength, length != Int64(version.length) { return "expectedLength \(length)" }
        let namesSomething = state.validator != nil || state.entityTag != nil || state.lastModified != nil
        if !namesSomething, version.entityTag != nil || version.lastModified != nil { return "no validator at all" }
        return nil
    }

    /// Why `state` is not resume state for `held` (nil when it is): it must name a version
    /// whose prefix `held` is, and no more bytes than `held`.
    func check(_ state: ResumeData, held: Data, offsetMayExceedHeld: Bool = false) -> String? {
        let named = "names offset \(state.offset), validator \(state.validator.map { "\($0)" } ?? "none"), "
            + "entityTag \(state.entityTag ?? "none"), lastModified \(state.lastModified ?? "none"), "
            + "expectedLength \(state.expectedLength.map(String.init) ?? "none")"
        if state.offset < 0 || (state.offset > Int64(held.count) && !offsetMayExceedHeld) {
            return "\(named): more than the \(held.count) B held"
        }
        guard !held.isEmpty else { return nil }
        let candidates = prefixes(held)
        if candidates.contains(where: { mismatch(state, versions[$0]) == nil }) { return nil }
        let why = candidates.map { "v\($0): \(mismatch(state, versions[$0]) ?? "")" }.joined(separator: "; ")
        return "\(named): not a version the \(held.count) B held are a prefix of (\(why))"
    }

    /// For a body in memory, whose bytes held are not visible: the state names some version
    /// that has at least `offset` bytes.
    func checkWithoutBytes(_ state: ResumeData) -> String? {
        if versions.contains(where: { Int64($0.length) >= state.offset && (state.offset == 0 || mismatch(state, $0) == nil) }) { return nil }
        return "names offset \(state.offset), validator \(state.validator.map { "\($0)" } ?? "none"), entityTag \(state.entityTag ?? "none"), "
            + "lastModified \(state.lastModified ?? "none"), expectedLength \(state.expectedLength.map(String.init) ?? "none"): no such version"
    }
}

/// The kind of an outcome, for counting: "success", or the error's type and code; nil for an
/// error of no type this library reports.
func campaignOutcomeKind(_ error: (any Error)?) -> String? {
    guard let error else { return "success" }
    switch error {
    case let error as URLError: return "URLError.\(campaignName(error.code))"
    case let error as ResumeError: return "ResumeError.\(error.code)"
    case let error as ResponseValidationError: return "ResponseValidationError \(error.statusCode)"
    case let error as TransferError: return "TransferError.\(error.code)"
    case let error as IntegrityError: return "IntegrityError.\(error.code)"
    default: return nil
    }
}

private func campaignName(_ code: URLError.Code) -> String {
    switch code {
    case .cancelled: "cancelled"
    case .networkConnectionLost: "networkConnectionLost"
    case .badServerResponse: "badServerResponse"
    case .timedOut: "timedOut"
    case .cannotWriteToFile: "cannotWriteToFile"
    case .cannotCreateFile: "cannotCreateFile"
    case .cannotConnectToHost: "cannotConnectToHost"
    case .secureConnectionFailed: "secureConnectionFailed"
    case .serverCertificateUntrusted: "serverCertificateUntrusted"
    case .dataLengthExceedsMaximum: "dataLengthExceedsMaximum"
    case .unknown: "unknown"
    default: "code \(code.rawValue)"
    }
}

// MARK: - Running a scenario

/// Records how a run's operation reported (every delivery, so a second one shows).
final class CampaignRunRecorder: Sendable {
    private let outcomes = Mutex<[(any Error)?]>([])
    let reported = CampaignLatch()

    func watch(_ operation: HTTPRequestOperation) {
        operation.setCompletionBlockWithSuccess({ _, _ in
            self.outcomes.withLock { $0.append(nil) }
            self.reported.fire()
        }, failure: { _, error in
            self.outcomes.withLock { $0.append(error) }
            self.reported.fire()
        })
    }

    var first: (any Error)?? { outcomes.withLock { $0.first } }
    var deliveries: Int { outcomes.withLock { $0.count } }
}

/// The manager shutdowns a run started, to wait for.
final class CampaignShutdowns: Sendable {
    let tasks = Mutex<[Task<ShutdownReport, Never>]>([])
}

/// One scenario as it runs: its runs one after the other, each judged by the oracle.
/// Used by one task at a time.
final class CampaignScenarioExecution: @unchecked Sendable {
    let scenario: CampaignScenario
    let servers: CampaignServers
    let file: URL
    let runDeadline: Duration
    let idleTimeout: TimeInterval
    private(set) var tally = CampaignTally()
    private var nextRun = 0
    private var ended = false
    private var lastKind = "not run"
    private var previous: HTTPRequestOperation?
    private var recorders: [(HTTPRequestOperation, CampaignRunRecorder)] = []
    private let events = Mutex<[String: Int]>([:])
    /// The in-memory `OutputStream` each run of a stream scenario wrote to, by operation.
    private var streams: [ObjectIdentifier: OutputStream] = [:]
    /// The POST the current run sent beside its download (see `ResumeCampaignPosts.swift`).
    private var pendingPost: PendingPost?
    /// The ids of the POSTs judged so far.
    var postsSent: [String] = []

    init(_ scenario: CampaignScenario, servers: CampaignServers, folder: URL, runDeadline: Duration, idleTimeout: TimeInterval) {
        self.scenario = scenario
        self.servers = servers
        self.file = folder.appendingPathComponent("scenario-\(scenario.index).bin")
        self.runDeadline = runDeadline
        self.idleTimeout = idleTimeout
        servers.server.register(scenario.resource)
    }

    /// Runs the scenario's runs from where it stands, up to run `limit` (all when nil).
    func run(upTo limit: Int? = nil) async {
        let end = min(limit ?? scenario.runs.count, scenario.runs.count)
        while !ended, nextRun < end {
            let number = nextRun
            nextRun += 1
            await runOne(number)
            if let post = pendingPost {
                pendingPost = nil
                await judge(post, run: number)
            }
        }
        if nextRun >= scenario.runs.count { ended = true }
    }

    /// The liveness oracle: once the server answers every request as RFC 9110 says, a download
    /// that goes on from what the runs left (the file and its sidecar, as `download(_:to:)`
    /// finds them) completes within a few attempts, with the current version whole. A resume
    /// state that every later attempt fails on (a download that never finishes) is a violation.
    func checkLiveness() async {
        servers.server.settle(scenario.resource.key)
        let request = URLRequest(url: servers.url(scenario), timeoutInterval: idleTimeout)
        let operation = scenario.toFile ? HTTPRequestOperation.download(request, to: file).operation
            : HTTPRequestOperation(request: request)
        servers.configure(operation, for: scenario.route)
        operation.retryPolicy = RetryPolicy(maximumRetries: 3, initialDelay: 0.002, maximumDelay: 0.02)
        let recorder = CampaignRunRecorder()
        recorder.watch(operation)
        OperationQueue().addOperation(operation)
        let number = scenario.runs.count
        guard await recorder.reported.wait(timeout: runDeadline) else {
            operation.cancel()
            _ = await recorder.reported.wait(timeout: .seconds(5))
            violation(number, "liveness: no outcome once the server behaved", "after \(runDeadline)")
            return
        }
        let versions = servers.server.versions(of: scenario.resource.key)
        let body = scenario.toFile ? (try? Data(contentsOf: file)) : operation.responseData
        // The current version, or one a client may take for it: the same strong ETag and
        // length (a server that changed its bytes under an unchanged strong ETag lies, and a
        // client trusts a strong ETag, RFC 9110 §8.8.3), or the same validators and length.
        // Not `versions.last`: the resource may have gone back to an earlier version.
        let current = servers.server.currentVersion(of: scenario.resource.key)
        let lookAlikes = versions.filter { version in
            guard let current, version.length == current.length else { return false }
            if let tag = current.entityTag, tag.hasPrefix("\"") { return version.entityTag == tag }
            return version.entityTag == current.entityTag && version.lastModified == current.lastModified
        }
        let oracle = CampaignOracle(versions: lookAlikes)
        if case let error?? = recorder.first {
            violation(number, "liveness: failed once the server behaved", "\(error)")
        } else if current != nil, !lookAlikes.contains(where: { oracle.isWhole(body ?? Data(), $0) }) {
            violation(number, "liveness: not the current version once the server behaved", body.map(oracle.describe) ?? "no body")
        } else {
            count("liveness: completed once the server behaved")
        }
    }

    /// Checks what is left to check once every run is over, counts, and cleans up.
    func finish() {
        checkPostsArrivedOnce()
        tally.scenarios = 1
        tally.scenarioOutcomes[lastKind, default: 0] += 1
        for (number, (operation, recorder)) in recorders.enumerated() where recorder.deliveries > 1 {
            violation(number, "reported more than once", "the operation \(operation.requestID) reported \(recorder.deliveries) outcomes")
        }
        tally.events.merge(events.withLock { $0 }, uniquingKeysWith: +)
        servers.server.remove(scenario.resource.key)
        try? FileManager.default.removeItem(at: file)
        try? FileManager.default.removeItem(at: ResumeData.sidecarURL(for: file))
        recorders = []
        streams = [:]
        previous = nil
    }

    func count(_ event: String) {
        events.withLock { $0[event, default: 0] += 1 }
    }

    func violation(_ run: Int, _ kind: String, _ detail: @autoclosure () -> String) {
        tally.record(scenario, run: run, kind: kind, detail: detail, serverLog: { servers.server.log(of: scenario.resource.key) })
    }

    private func makeOperation(_ run: CampaignScenario.Run) -> HTTPRequestOperation {
        let request = URLRequest(url: servers.url(scenario), timeoutInterval: idleTimeout)
        guard scenario.toFile else {
            let operation = HTTPRequestOperation(request: request)
            if scenario.toStream {
                count("destination: OutputStream")
                let stream = OutputStream(toMemory: ())
                operation.outputStream = stream
                streams[ObjectIdentifier(operation)] = stream
            }
            return operation
        }
        switch run.start {
        case .fresh, .sidecar:
            return HTTPRequestOperation.download(request, to: file).operation
        case .resumeData:
            if let saved = previous?.resumeData {
                count("restart: init(resumeData:)")
                return HTTPRequestOperation(resumeData: saved)
            }
            count("restart: init(resumeData:) without resumeData, so download(_:to:)")
            return HTTPRequestOperation.download(request, to: file).operation
        case .sidecarAfterCrash(let keep):
            if let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int,
               let handle = try? FileHandle(forWritingTo: file) {
                try? handle.truncate(atOffset: UInt64(Double(size) * keep))
                try? handle.close()
                count("restart: file cut as by a crash")
            }
            return HTTPRequestOperation.download(request, to: file).operation
        }
    }

    private func runOne(_ number: Int) async {
        let run = scenario.runs[number]
        if number > 0 { count("restart: run \(number + 1)") }
        let operation = makeOperation(run)
        // What the run starts from (after a simulated crash cut the file): a file shorter than
        // the sidecar's offset is the crash's doing until the library rewrites the sidecar.
        let requestsBefore = servers.server.requestCount(of: scenario.resource.key)
        let sidecarBefore = try? Data(contentsOf: ResumeData.sidecarURL(for: file))
        var crashCut = false
        if case .sidecarAfterCrash = run.start { crashCut = true }
        servers.configure(operation, for: scenario.route)
        operation.retryPolicy = RetryPolicy(maximumRetries: run.retries, initialDelay: 0.002, multiplier: 2, maximumDelay: 0.02,
                                            retryableStatusCodes: run.retriesStatuses ? [408, 429, 502, 503, 504] : [])
        let recorder = CampaignRunRecorder()
        recorder.watch(operation)
        recorders.append((operation, recorder))
        let manager = run.usesManager ? HTTPRequestOperationManager() : nil
        let shutdowns = CampaignShutdowns()

        // The events, each once: at a byte count (from the progress block) or a time.
        let fired = Mutex([Bool](repeating: false, count: run.events.count))
        let perform: @Sendable (Int) -> Void = { [weak operation] index in
            guard let operation, fired.withLock({ flags in defer { flags[index] = true }; return !flags[index] }) else { return }
            self.perform(run.events[index].action, on: operation, manager: manager, shutdowns: shutdowns)
        }
        let byteEvents = run.events.indices.compactMap { index -> (Int, Int64)? in
            if case .bytes(let count) = run.events[index].trigger { return (index, count) }
            return nil
        }
        if !byteEvents.isEmpty {
            operation.setDownloadProgressBlock { _, total, _ in
                for (index, threshold) in byteEvents where total >= threshold { perform(index) }
            }
        }
        for index in run.events.indices {
            if case .milliseconds(let delay) = run.events[index].trigger {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) { perform(index) }
            }
        }

        pendingPost = run.post.map(startPost)
        if let manager {
            manager.enqueue(operation)
        } else {
            campaignQueue.addOperation(operation)
        }

        guard await recorder.reported.wait(timeout: runDeadline) else {
            violation(number, "hang: no outcome",
                      "no outcome within \(runDeadline): executing \(operation.isExecuting), paused \(operation.isPaused), "
                      + "cancelled \(operation.isCancelled), finished \(operation.isFinished)")
            operation.cancel()
            operation.resume()
            _ = await recorder.reported.wait(timeout: .seconds(5))
            lastKind = "hang"
            ended = true
            return
        }
        if !(await campaignWaitUntilFinished(operation, timeout: .seconds(10))) {
            violation(number, "hang: reported, never finished",
                      "executing \(operation.isExecuting), paused \(operation.isPaused), finished \(operation.isFinished)")
            ended = true
        }
        for task in shutdowns.tasks.withLock({ $0 }) {
            let report = await task.value
            count("shutdown: \(report.pausedDownloads.count) paused, \(report.cancelled) cancelled, \(report.completed) completed")
        }
        tally.runs += 1
        if scenario.route == .http2ThroughNginx, let version = operation.timings?.lastTransfer.httpVersion {
            count("route \(scenario.route.rawValue): answered over HTTP/\(version)")
            if version != "2" { violation(number, "HTTP/2 route: not HTTP/2", "answered over HTTP/\(version)") }
        }
        let error = recorder.first ?? nil
        let metrics = operation.downloadMetrics
        if metrics.automaticResumes > 0 { count("library: automatic resumes"); events.withLock { $0["library: automatic resumes (sum)", default: 0] += metrics.automaticResumes } }
        if metrics.resumes > metrics.automaticResumes { count("library: resumes after a pause (runs)") }
        if metrics.restartsFromZero > 0 { count("library: restarts from zero (runs)") }
        guard let kind = campaignOutcomeKind(error) else {
            violation(number, "untyped error", "\(String(reflecting: type(of: error!))): \(error!)")
            lastKind = "untyped error"
            ended = true
            return
        }
        tally.runOutcomes[kind, default: 0] += 1
        lastKind = kind
        let sentRequests = servers.server.requestCount(of: scenario.resource.key) > requestsBefore
        let sidecarUntouched = (try? Data(contentsOf: ResumeData.sidecarURL(for: file))) == sidecarBefore
        judge(number, operation: operation, error: error, kind: kind, sentRequests: sentRequests,
              sidecarMayExceedFile: crashCut && sidecarUntouched, resumeDataMayExceedFile: crashCut && !sentRequests)
        previous = operation
        if error == nil { ended = true }
    }

    private func perform(_ action: CampaignScenario.Action, on operation: HTTPRequestOperation,
                         manager: HTTPRequestOperationManager?, shutdowns: CampaignShutdowns) {
        switch action {
        case .pauseThenResume(let delay):
            count("pause(completion:), resume")
            operation.pause { [weak operation] in
                guard let operation, operation.isPaused else { return }
                self.count("pause took effect")
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) { operation.resume() }
            }
        case .pauseAndResumeAtOnce:
            count("pause() and resume() at once")
            operation.pause()
            operation.resume()
        case .pauseThenRestart:
            count("pause(completion:), cancel")
            operation.pause { [weak operation] in
                guard let operation else { return }
                if operation.isPaused { self.count("pause took effect") }
                operation.cancel()
            }
        case .cancel:
            count("cancel()")
            operation.cancel()
        case .shutdown(let pauseDownloads, let grace):
            guard let manager else { return }
            count("manager shutdown")
            let task = Task { await manager.shutdown(gracePeriod: .milliseconds(grace), pauseDownloads: pauseDownloads) }
            shutdowns.tasks.withLock { $0.append(task) }
        case .strayResume:
            count("stray resume()")
            operation.resume()
        }
    }

    /// The oracle, on what the run left.
    ///
    /// - Parameters:
    ///   - sentRequests: Whether the run sent the server anything: an operation cancelled
    ///     before its first request need have no `resumeData`.
    ///   - sidecarMayExceedFile: The run began from a file a simulated crash cut shorter than
    ///     its sidecar says, and left the sidecar as it was: its offset is allowed past the file
    ///     (documented as advisory), not its naming.
    ///   - resumeDataMayExceedFile: Likewise for `resumeData`, when the run sent nothing.
    private func judge(_ number: Int, operation: HTTPRequestOperation, error: (any Error)?, kind: String, sentRequests: Bool,
                       sidecarMayExceedFile: Bool, resumeDataMayExceedFile: Bool) {
        let oracle = CampaignOracle(versions: servers.server.versions(of: scenario.resource.key))
        guard scenario.toFile else {
            let stream = streams[ObjectIdentifier(operation)]
            let written = stream.map { ($0.property(forKey: .dataWrittenToMemoryStreamKey) as? Data) ?? Data() }
            if error == nil {
                let body = written ?? operation.responseData ?? Data()
                if !oracle.versions.contains(where: { oracle.isWhole(body, $0) }) {
                    violation(number, "success: " + oracle.shape(body), (stream == nil ? "memory body: " : "stream: ") + oracle.describe(body))
                }
            } else if let written, !written.isEmpty, oracle.prefixes(written).isEmpty {
                // What went out to a stream cannot be taken back: after a failure it must still
                // be a true prefix of one version.
                violation(number, "failure: stream holds " + oracle.shape(written), "after \(kind): " + oracle.describe(written))
            }
            if let state = operation.resumeData, let why = oracle.checkWithoutBytes(state) {
                violation(number, "resume state: names no version", "resumeData after \(kind) " + why)
            }
            return
        }
        let held = try? Data(contentsOf: file)
        let sidecarURL = ResumeData.sidecarURL(for: file)
        var sidecar: ResumeData?
        if let saved = try? Data(contentsOf: sidecarURL) {
            do {
                sidecar = try ResumeData(from: saved)
            } catch {
                violation(number, "sidecar unreadable", "after \(kind): \(error)")
            }
        }
        let states: [(String, ResumeData)] = [("sidecar", sidecar), ("resumeData", operation.resumeData)].compactMap { label, state in
            state.map { (label, $0) }
        }
        if error == nil {
            guard let held, oracle.versions.contains(where: { oracle.isWhole(held, $0) }) else {
                violation(number, "success: " + (held.map(oracle.shape) ?? "no file"), held.map(oracle.describe) ?? "no file")
                return
            }
            for (label, state) in states {
                if let why = oracle.check(state, held: held,
                                          offsetMayExceedHeld: label == "sidecar" ? sidecarMayExceedFile : resumeDataMayExceedFile) {
                    violation(number, "resume state: names another version", "after success, the \(label) " + why)
                } else if label == "sidecar" {
                    tally.notes["a consistent sidecar left beside a complete file", default: 0] += 1
                }
            }
            return
        }
        let bytes = held ?? Data()
        guard !oracle.prefixes(bytes).isEmpty else {
            let named = states.filter { $0.1.offset > 0 }
            let stateText = states.isEmpty ? "no resume state" : states.map { label, state in
                "\(label): offset \(state.offset), validator \(state.validator.map { "\($0)" } ?? "none"), "
                    + "entityTag \(state.entityTag ?? "none"), lastModified \(state.lastModified ?? "none")"
            }.joined(separator: "; ")
            let what = "failure: " + oracle.shape(bytes) + (CampaignOracle.isErrorAnswerBody(bytes) && !named.isEmpty ? ", named by the resume state" : "")
            violation(number, what, "after \(kind): " + oracle.describe(bytes) + "; " + stateText)
            return
        }
        if !bytes.isEmpty {
            if sidecar == nil { violation(number, "resume state: missing", "after \(kind), \(bytes.count) B held and no sidecar") }
            if operation.resumeData == nil {
                if sentRequests {
                    violation(number, "resume state: missing", "after \(kind), \(bytes.count) B held and no resumeData")
                } else {
                    tally.notes["no resumeData from an operation that failed before its first request", default: 0] += 1
                }
            }
        }
        for (label, state) in states {
            if let why = oracle.check(state, held: bytes,
                                      offsetMayExceedHeld: label == "sidecar" ? sidecarMayExceedFile : resumeDataMayExceedFile) {
                violation(number, "resume state: names another version or more bytes", "after \(kind), the \(label) " + why)
            }
        }
    }
}

// MARK: - Running a campaign

/// What a child process of the campaign is asked to run.
struct CampaignChildOrder: Codable, Sendable {
    var mode: CampaignScenario.Mode
    var seed: UInt64
    var indices: [Int]
    var concurrency: Int
    /// `RLIMIT_FSIZE` during each scenario's first run (write-limited children).
    var writeLimit: Int?
    var runDeadlineSeconds: Int
    var idleTimeout: TimeInterval
    /// Adversities left out (``CampaignScenario/Skip``), to look past a known defect.
    var skips: Set<CampaignScenario.Skip> = []
}

enum ResumeCampaignDriver {
    static let tallyMarker = "RESUME-CAMPAIGN-TALLY "

    /// Runs the scenarios `indices` of campaign `seed`, `concurrency` at a time. With a write
    /// limit, first every scenario's first run under it, then the rest without.
    ///
    /// - Parameter snapshots: Called with the tally so far every 100 scenarios (a child
    ///   prints it, so that a crash loses only what came after).
    static func run(_ order: CampaignChildOrder, progress: Bool = false,
                    snapshots: (@Sendable (CampaignTally) -> Void)? = nil) async -> CampaignTally {
        let started = ContinuousClock.now
        let servers = CampaignServers.shared
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-campaign-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let executions = order.indices.map { index in
            CampaignScenarioExecution(CampaignScenario.draw(index: index, campaignSeed: order.seed, mode: order.mode, skipping: order.skips),
                                      servers: servers, folder: folder, runDeadline: .seconds(order.runDeadlineSeconds),
                                      idleTimeout: order.idleTimeout)
        }
        let answersBefore = servers.server.answerCounts
        let proxyBefore = servers.proxy.connectionCounts
        var tally = CampaignTally()
        let done = Atomic<Int>(0)
        let monitor = progress ? Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(10))
                if Task.isCancelled { break }
                print("resume campaign: \(done.load(ordering: .relaxed)) of \(executions.count) scenarios done")
            }
        } : nil
        defer { monitor?.cancel() }

        if let limit = order.writeLimit {
            setFileSizeLimit(limit)
            await forEach(executions, concurrency: order.concurrency) { await $0.run(upTo: 1) }
            setFileSizeLimit(nil)
        }
        let running = Mutex(CampaignTally())
        await forEach(executions, concurrency: order.concurrency) { execution in
            await execution.run()
            await execution.checkLiveness()
            execution.finish()
            let snapshot = running.withLock { running -> CampaignTally? in
                running.merge(execution.tally)
                return running.scenarios % 100 == 0 ? running : nil
            }
            if let snapshot { snapshots?(snapshot) }
            done.add(1, ordering: .relaxed)
        }
        tally = running.withLock { $0 }
        for (kind, count) in servers.server.answerCounts { tally.coverage["server: " + kind, default: 0] += count - (answersBefore[kind] ?? 0) }
        for (kind, count) in servers.proxy.connectionCounts { tally.coverage["proxy: " + kind, default: 0] += count - (proxyBefore[kind] ?? 0) }
        tally.seconds = (ContinuousClock.now - started).campaignSeconds
        return tally
    }

    /// Runs `body` on each of `items`, at most `concurrency` at once.
    static func forEach(_ items: [CampaignScenarioExecution], concurrency: Int,
                        _ body: @escaping @Sendable (CampaignScenarioExecution) async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            var iterator = items.makeIterator()
            for _ in 0..<max(1, concurrency) {
                guard let item = iterator.next() else { break }
                group.addTask { await body(item) }
            }
            while await group.next() != nil {
                if let item = iterator.next() { group.addTask { await body(item) } }
            }
        }
    }

    /// Sets the soft `RLIMIT_FSIZE` (nil: none), with `SIGXFSZ` ignored so that a write past
    /// it fails with `EFBIG` instead of killing the process.
    static func setFileSizeLimit(_ bytes: Int?) {
        signal(SIGXFSZ, SIG_IGN)
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
        limit.rlim_cur = bytes.map { rlim_t($0) } ?? limit.rlim_max
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    }

    /// The body of a child process: runs `order`, prints the tally, exits with
    /// ``childFinished``.
    static func runChild(_ order: CampaignChildOrder) async -> Never {
        if order.mode == .environmentProxy {
            for name in ["no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "http_proxy", "HTTPS_PROXY"] { unsetenv(name) }
            setenv("https_proxy", CampaignServers.shared.proxy.url.absoluteString, 1)
        }
        @Sendable func report(_ tally: CampaignTally) {
            let encoded = (try? JSONEncoder().encode(tally)).map { $0.base64EncodedString() } ?? ""
            print(tallyMarker + encoded)
            fflush(nil)
        }
        report(await run(order, snapshots: report))
        exit(childFinished)
    }

    /// How a child that ran to its end exits: not 0, so that the test can expect
    /// `.failure` — which a crash matches too — and still read the output of a child that
    /// crashed (an exit test whose expectation fails returns nothing).
    static let childFinished: Int32 = 3

    /// The lines of a crash report (the Swift runtime's backtrace) from the crashed thread on.
    static func crashExcerpt(_ errorOutput: [UInt8]) -> String {
        let lines = String(decoding: errorOutput, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let start = lines.firstIndex { $0.hasPrefix("Thread ") && $0.hasSuffix(" crashed:") }
            ?? lines.firstIndex { $0.contains("Fatal error") || $0.contains("crashed") }
        let excerpt = start.map { lines[$0...].prefix(16) } ?? lines.suffix(20)
        return excerpt.joined(separator: "\n")
    }

    /// The tally a child printed.
    static func tally(fromChildOutput output: [UInt8]) -> CampaignTally? {
        let text = String(decoding: output, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix(tallyMarker) }),
              let data = Data(base64Encoded: String(line.dropFirst(tallyMarker.count))) else { return nil }
        return try? JSONDecoder().decode(CampaignTally.self, from: data)
    }
}

extension Duration {
    var campaignSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
