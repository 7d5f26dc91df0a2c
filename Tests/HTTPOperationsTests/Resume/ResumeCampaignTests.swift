import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    /// Issue 24's adversarial resume campaign: the property "never a wrong byte called
    /// success", checked over thousands of scenarios drawn from a seed rather than a list of
    /// cases.
    ///
    /// Each scenario draws a resource with versions (bytes from the version and the offset;
    /// an `ETag`, strong, weak or none, and a `Last-Modified` date or none; a length), a script
    /// for the ``AdversarialResumeServer`` (per request: change the resource with or without a
    /// new `ETag`, date or length; ignore `If-Range`; answer a `Range` correctly or with a
    /// short, overlapping or late-starting `206`, a `206` without `Content-Range`, a `200`, a
    /// `416` or a 4xx/5xx; drop the connection with a FIN or a reset before the head or at
    /// any byte of the body), a route (http, https through a TLS relay, https over HTTP/2 to
    /// nginx in front of the server, http through a forwarding proxy, https through a `CONNECT`
    /// tunnel — named in the route, or read from `https_proxy` on the default route in a child
    /// process), a destination (a file, memory, or an `OutputStream`), and one to four runs: operations one after the other, started fresh, from the
    /// sidecar (`download(_:to:)`), from `resumeData` (`init(resumeData:)`) or from a file cut
    /// short as by a crash, with pauses, resumes, cancels, stray resumes and manager shutdowns
    /// at random bytes or times. In child processes the first run of each scenario writes
    /// under `RLIMIT_FSIZE` (SIGXFSZ ignored): the destination fails writes past a size.
    ///
    /// The oracle, after every run: a success is exactly one version, byte for byte; a failure
    /// is a typed error, the file a true prefix of one version, and the resume state — the
    /// sidecar and the operation's `resumeData`, which must both be there when bytes are held
    /// — names that version (its validators and length) and no more bytes than the file has.
    /// A run with no outcome within its deadline is a hang. A third of the runs send a POST
    /// beside the download, on the same route and curl's same kept-alive connections, which the
    /// server may close unanswered as the POST arrives: it must arrive at most once, and a
    /// success is its own answer (`ResumeCampaignPosts.swift`). Liveness, after the runs: once the
    /// server answers as RFC 9110 says, a download from what they left completes within three
    /// retries with the current version. Every violation is counted and the
    /// first ones printed with their scenario, seed, plan and the server's log; the test
    /// fails when there is any.
    ///
    /// `HTTPOPERATIONS_SEED` replays a campaign; `HTTPOPERATIONS_CAMPAIGN_SCENARIO=<index>`
    /// runs only that scenario of it (in the child it belongs to). The counts:
    /// `HTTPOPERATIONS_CAMPAIGN_SCENARIOS` (in the test's process), `…_WRITE_LIMITED` (in two
    /// write-limited children), `…_ENVIRONMENT_PROXY` (in the `https_proxy` child),
    /// `…_CONCURRENCY` (scenarios at once). `HTTPOPERATIONS_CAMPAIGN_SKIP=status-without-range,…`
    /// leaves adversities out (``CampaignScenario/Skip``), to look past a known defect.
    @Suite struct ResumeCampaign {
        static let environment = ProcessInfo.processInfo.environment

        static func count(_ name: String, plain: Int, sanitized: Int) -> Int {
            if let value = environment["HTTPOPERATIONS_CAMPAIGN_" + name].flatMap(Int.init) { return max(0, value) }
            #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
            return sanitized
            #else
            return plain
            #endif
        }

        static var scenarios: Int { count("SCENARIOS", plain: 5_000, sanitized: 500) }
        static var writeLimited: Int { count("WRITE_LIMITED", plain: 400, sanitized: 100) }
        static var environmentProxy: Int { count("ENVIRONMENT_PROXY", plain: 300, sanitized: 60) }
        static var concurrency: Int { count("CONCURRENCY", plain: 32, sanitized: 8) }
        #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
        static let runDeadlineSeconds = 60
        static let idleTimeout: TimeInterval = 20
        #else
        static let runDeadlineSeconds = 10
        static let idleTimeout: TimeInterval = 5
        #endif

        /// Where scenario indices of each kind start: the index says which process runs it.
        static let writeLimitedBase = 1_000_000, environmentProxyBase = 3_000_000

        @Test(.timeLimit(.minutes(20)))
        func everyOutcomeIsOneVersionOrATruePrefixWithItsResumeState() async throws {
            var generator = SeededGenerator(for: "resume campaign")
            let seed = generator.seed
            let only = Self.environment["HTTPOPERATIONS_CAMPAIGN_SCENARIO"].flatMap(Int.init)
            // Two write limits from the seed: one under most bodies, one among them.
            let limits = [Int.random(in: 2_048...(48 << 10), using: &generator), Int.random(in: (48 << 10)...(160 << 10), using: &generator)]
            var inProcess = Array(0..<Self.scenarios)
            let limitedPerChild = Self.writeLimited / 2
            var limited = (0..<2).map { child in
                Array((Self.writeLimitedBase + child * 1_000_000)..<(Self.writeLimitedBase + child * 1_000_000 + limitedPerChild))
            }
            var proxied = Array(Self.environmentProxyBase..<(Self.environmentProxyBase + Self.environmentProxy))
            if let only {
                inProcess = inProcess.contains(only) || only < Self.writeLimitedBase ? [only] : []
                limited = limited.map { $0.contains(only) ? [only] : [] }
                proxied = proxied.contains(only) ? [only] : []
            }
            let skips = Set((Self.environment["HTTPOPERATIONS_CAMPAIGN_SKIP"] ?? "").split(separator: ",").compactMap {
                CampaignScenario.Skip(rawValue: $0.trimmingCharacters(in: .whitespaces))
            })
            if !skips.isEmpty { print("resume campaign: leaving out \(skips.map(\.rawValue).sorted())") }
            print("resume campaign (seed \(seed)): \(inProcess.count) scenarios here, \(limited.map(\.count)) under write limits "
                  + "\(limits) B, \(proxied.count) through https_proxy; \(Self.concurrency) at a time")

            let started = ContinuousClock.now
            var tally = CampaignTally()
            if !inProcess.isEmpty {
                let order = CampaignChildOrder(mode: .inProcess, seed: seed, indices: inProcess, concurrency: Self.concurrency,
                                               writeLimit: nil, runDeadlineSeconds: Self.runDeadlineSeconds, idleTimeout: Self.idleTimeout,
                                               skips: skips)
                let here = await ResumeCampaignDriver.run(order, progress: true)
                print("resume campaign, in this process: " + here.summary)
                tally.merge(here)
            }
            var children: [CampaignChildOrder] = []
            for (child, indices) in limited.enumerated() where !indices.isEmpty {
                children.append(CampaignChildOrder(mode: .writeLimited, seed: seed, indices: indices, concurrency: Self.concurrency,
                                                   writeLimit: limits[child], runDeadlineSeconds: Self.runDeadlineSeconds,
                                                   idleTimeout: Self.idleTimeout, skips: skips))
            }
            if !proxied.isEmpty {
                children.append(CampaignChildOrder(mode: .environmentProxy, seed: seed, indices: proxied, concurrency: Self.concurrency,
                                                   writeLimit: nil, runDeadlineSeconds: Self.runDeadlineSeconds,
                                                   idleTimeout: Self.idleTimeout, skips: skips))
            }
            // A child that crashes says where on its standard error (the runtime's backtrace).
            setenv("SWIFT_BACKTRACE", "enable=yes,interactive=no,color=no,output-to=stderr", 0)
            var lost = 0
            for order in children {
                // The child exits with `childFinished` when it ran to its end; a crash is a
                // failure too, and the expectation still returns its output.
                let result = await #expect(processExitsWith: .failure, observing: [\.standardOutputContent, \.standardErrorContent]) {
                    [order = order as CampaignChildOrder] in
                    await ResumeCampaignDriver.runChild(order)
                }
                let what = order.writeLimit.map { "write limit \($0) B" } ?? "https_proxy"
                let childTally = result.flatMap { ResumeCampaignDriver.tally(fromChildOutput: $0.standardOutputContent) } ?? CampaignTally()
                if let result, result.exitStatus != .exitCode(ResumeCampaignDriver.childFinished) {
                    lost += order.indices.count - childTally.scenarios
                    tally.record(kind: "a child process died",
                                 detail: "the child with \(what) ended with \(result.exitStatus) after \(childTally.scenarios) of "
                                     + "\(order.indices.count) scenarios (seed \(seed)):\n"
                                     + ResumeCampaignDriver.crashExcerpt(result.standardErrorContent))
                }
                print("resume campaign, child with \(what): " + childTally.summary)
                tally.merge(childTally)
            }
            tally.seconds = (ContinuousClock.now - started).campaignSeconds
            print("resume campaign (seed \(seed)), all: " + tally.summary)
            if tally.violations > 0 {
                print(tally.describeViolations())
            }
            #expect(tally.violations == 0,
                    "\(tally.violations) violations in \(tally.scenarios) scenarios (seed \(seed), replay with HTTPOPERATIONS_SEED=\(seed)): \(tally.violationKinds)")
            if only == nil {
                #expect(tally.scenarios + lost == inProcess.count + limited.map(\.count).reduce(0, +) + proxied.count)
            }
        }
    }
}
