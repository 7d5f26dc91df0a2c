import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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
