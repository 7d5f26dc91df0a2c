import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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

