import Foundation
import HTTPTestServer

/// What one scenario of the resume campaign does, drawn from its own seed before it starts:
/// the resource and the script of its server, where the body goes, the route, and the runs
/// (operations, one after the other, each continuing from what the one before left) with the
/// pauses, resumes, restarts, cancels and shutdowns each meets.
struct CampaignScenario: Sendable, CustomStringConvertible {
    /// How the client reaches the server.
    enum Route: String, Sendable, CaseIterable {
        /// http, no proxy.
        case http
        /// https (the TLS relay in front of the server), no proxy.
        case https
        /// http through the campaign's proxy, which passes the request on (no tunnel: curl
        /// sends an http URL to an HTTP proxy whole, and the library offers no option to tunnel it).
        case httpThroughProxy = "http via proxy"
        /// https through the campaign's proxy: a `CONNECT` tunnel, named in the route.
        case httpsThroughConnect = "https via CONNECT"
        /// https through the proxy `https_proxy` names, on the default route (child process only).
        case httpsThroughEnvironmentProxy = "https via CONNECT from https_proxy"
        /// http on the default route (`http_proxy` unset: direct), in the same child.
        case httpDefaultRoute = "http on the default route"
        /// https over HTTP/2 to nginx, which passes requests on to the server over HTTP/1.1
        /// (``CampaignHTTP2Front``; the test's process only).
        case http2ThroughNginx = "https over HTTP/2 via nginx"

        var isTLS: Bool {
            self == .https || self == .httpsThroughConnect || self == .httpsThroughEnvironmentProxy || self == .http2ThroughNginx
        }
    }

    /// Which processes a scenario may run in.
    enum Mode: String, Sendable, Codable {
        /// The test's own process.
        case inProcess
        /// A child whose file writes fail past a size (`RLIMIT_FSIZE`) during each scenario's first run.
        case writeLimited
        /// A child with `https_proxy` set: routes are the default one.
        case environmentProxy
    }

    /// How a run starts.
    enum Start: Sendable, CustomStringConvertible {
        /// A new download (the first run).
        case fresh
        /// `HTTPRequestOperation.download(_:to:)`: from the sidecar beside the file.
        case sidecar
        /// `HTTPRequestOperation(resumeData:)` with the last operation's `resumeData` (the
        /// sidecar when it had none).
        case resumeData
        /// As after a crash between a write and the next save: the file is cut to this
        /// fraction of its size, then `download(_:to:)`.
        case sidecarAfterCrash(Double)

        var description: String {
            switch self {
            case .fresh: "fresh"
            case .sidecar: "download(_:to:) from the sidecar"
            case .resumeData: "init(resumeData:)"
            case .sidecarAfterCrash(let keep): "file cut to \(String(format: "%.2f", keep)) as by a crash, then download(_:to:)"
            }
        }
    }

    /// When an event happens.
    enum Trigger: Sendable, CustomStringConvertible {
        /// Once progress reports this many bytes.
        case bytes(Int64)
        /// This long after the operation is enqueued.
        case milliseconds(Int)

        var description: String {
            switch self {
            case .bytes(let count): "at \(count) B"
            case .milliseconds(let ms): "after \(ms) ms"
            }
        }
    }

    /// What an event does to the operation.
    enum Action: Sendable, CustomStringConvertible {
        /// `pause(completion:)`, then `resume()` this long after the completion.
        case pauseThenResume(Int)
        /// `pause()` and `resume()` at once, without waiting.
        case pauseAndResumeAtOnce
        /// `pause(completion:)`, then `cancel()`: the next run continues from the sidecar.
        case pauseThenRestart
        /// `cancel()`.
        case cancel
        /// The manager's `shutdown(gracePeriod:pauseDownloads:)`.
        case shutdown(pauseDownloads: Bool, graceMilliseconds: Int)
        /// `resume()` of an operation that is not paused.
        case strayResume

        var description: String {
            switch self {
            case .pauseThenResume(let ms): "pause, resume \(ms) ms after"
            case .pauseAndResumeAtOnce: "pause and resume at once"
            case .pauseThenRestart: "pause, cancel, restart"
            case .cancel: "cancel"
            case .shutdown(let pause, let grace): "manager shutdown (\(pause ? "pausing downloads" : "not pausing"), grace \(grace) ms)"
            case .strayResume: "stray resume"
            }
        }
    }

    struct Event: Sendable, CustomStringConvertible {
        var trigger: Trigger
        var action: Action
        var description: String { "\(action) \(trigger)" }
    }

    /// A POST sent beside a run's download, on the same route: it shares curl's kept-alive
    /// connections with the downloads, which the server may close as the POST arrives.
    struct Post: Sendable, CustomStringConvertible {
        /// Its path's id (``AdversarialResumeServer/postPath(of:)``), unique in the campaign.
        var id: String
        /// The server closes the connection unanswered when the POST comes on a reused one.
        var closeIfReused: Bool
        /// Its body is a `StreamedRequestBody` (else `httpBody`).
        var streamed: Bool

        var description: String {
            "POST \(id) beside it (\(streamed ? "streamed" : "httpBody")\(closeIfReused ? ", closed unanswered if on a reused connection" : ""))"
        }
    }

    struct Run: Sendable, CustomStringConvertible {
        var start: Start
        var retries: Int
        var retriesStatuses: Bool
        var events: [Event]
        /// A POST sent as the run starts, or none.
        var post: Post?
        /// Enqueued on a manager of its own (which a shutdown event shuts down).
        var usesManager: Bool {
            events.contains { if case .shutdown = $0.action { return true } else { return false } }
        }

        var description: String {
            "\(start); \(retries) retries\(retriesStatuses ? " (and of 408/429/502/503/504)" : "")"
                + (events.isEmpty ? "" : "; " + events.map(\.description).joined(separator: ", "))
                + (post.map { "; \($0)" } ?? "")
        }
    }

    let index: Int
    let seed: UInt64
    let mode: Mode
    let resource: AdversarialResource
    let toFile: Bool
    /// Not to a file: to an `OutputStream` (in memory) rather than `responseData`. Such a
    /// download cannot start over once bytes went out, so a changed version fails it.
    var toStream = false
    let route: Route
    var runs: [Run]

    var description: String {
        var lines = ["scenario \(index) (seed \(seed), \(mode.rawValue)): \(resource.length) B, ETag \(resource.entityTag.rawValue), "
            + "Last-Modified \(resource.sendsLastModified ? (resource.datesAreWeak ? "yes, in the second of its Date" : "yes") : "no"), to \(toFile ? "a file" : toStream ? "an OutputStream" : "memory"), \(route.rawValue)"]
        for (number, step) in resource.script.enumerated() { lines.append("  request \(number + 1) without Range: \(step)") }
        for (number, step) in resource.rangeScript.enumerated() { lines.append("  request \(number + 1) with Range: \(step)") }
        for (number, run) in runs.enumerated() { lines.append("  run \(number + 1): \(run)") }
        return lines.joined(separator: "\n")
    }

    /// Adversities a run may leave out (`HTTPOPERATIONS_CAMPAIGN_SKIP=a,b`), to look past a
    /// defect already known: each is drawn as usual, then replaced by the correct behaviour,
    /// so every other draw of the seed stays the same.
    enum Skip: String, Sendable, Codable, CaseIterable {
        /// 4xx/5xx answers to requests without a `Range`.
        case statusWithoutRange = "status-without-range"
        /// 2xx (other than 200 and 206), 4xx and 5xx answers to requests with a `Range`.
        case statusWithRange = "status-with-range"
        case short206 = "short-206"
        case overlapping206 = "overlapping-206"
        case lateStart206 = "late-start-206"
        case missingContentRange = "missing-content-range"
        case overlong206 = "overlong-206"
        case unsatisfiable416 = "416"
        case full200 = "200-to-range"
        case ignoringIfRange = "ignoring-if-range"
        case changes
        case drops
        case unknownTotal206 = "unknown-total-206"
        case extreme206 = "extreme-206"
        case redirects
        case gzip
        case chunked
        case weakenedEntityTags = "weakened-etags"
        case validatorsOn416 = "validators-on-416"
        case keepAlive = "keep-alive"
    }

    /// The scenario `index` of the campaign `seed`: the same pair draws the same scenario.
    static func draw(index: Int, campaignSeed: UInt64, mode: Mode, skipping skips: Set<Skip> = []) -> CampaignScenario {
        let seed = campaignSeed ^ (UInt64(index) &* 0x9E37_79B9_7F4A_7C15) ^ 0x5EED
        var random = SeededGenerator(seed: seed)
        func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

        let length: Int = switch Int.random(in: 0..<100, using: &random) {
        case 0..<8: Int.random(in: 0...64, using: &random)
        case 8..<35: Int.random(in: 65...8 << 10, using: &random)
        case 35..<97: Int.random(in: (8 << 10)...(192 << 10), using: &random)
        // Larger than one of the body writer's buffers (256 KiB): backpressure runs.
        default: Int.random(in: (256 << 10)...(1536 << 10), using: &random)
        }
        let entityTag: AdversarialResource.EntityTagKind = switch Int.random(in: 0..<100, using: &random) {
        case 0..<55: .strong
        case 55..<70: .weak
        default: .none
        }
        let sendsLastModified = chance(50)
        // A file rewritten in the second it was served: its date names no version.
        let datesAreWeak = sendsLastModified && chance(30)
        func drawStep(forRange: Bool) -> AdversarialStep {
            var step = AdversarialStep()
            if chance(15) {
                if chance(75) {
                    step.change = .newContent(newEntityTag: chance(70), newLastModified: chance(50),
                                              length: chance(30) ? Int.random(in: 0...(192 << 10), using: &random) : nil)
                } else {
                    step.change = .newLength(max(0, length + Int.random(in: -length...(length + 1), using: &random)))
                }
            }
            step.ignoresIfRange = forRange && chance(30)
            let fraction = Double.random(in: 0..<1, using: &random)
            if forRange {
                step.answer = switch Int.random(in: 0..<100, using: &random) {
                case 0..<28: .correct
                case 28..<36: .full200
                case 36..<52: .short206(fraction)
                case 52..<58: .overlapping206(fraction)
                case 58..<64: .wrongStart206(fraction)
                case 64..<68: .missingContentRange206
                case 68..<75: .unsatisfiable416
                // Another 2xx is neither part of the resource nor all of it; an overlong 206
                // sends bytes past its Content-Range (both found by review, missed before).
                case 75..<78: .status([202, 203].randomElement(using: &random)!)
                case 78..<82: .overlong206(fraction)
                // Issue 38: `/*` ranges, a last byte at Int64.max, redirects.
                case 82..<86: .unknownTotal206
                case 86..<89: .extreme206
                case 89..<93: .redirect([301, 302, 307, 308].randomElement(using: &random)!)
                default: .status([403, 404, 408, 410, 429, 500, 502, 503, 504].randomElement(using: &random)!)
                }
            } else {
                step.answer = switch Int.random(in: 0..<100, using: &random) {
                case 0..<70: .correct
                case 70..<78: .redirect([301, 302, 307, 308].randomElement(using: &random)!)
                default: .status([403, 404, 408, 410, 429, 500, 502, 503, 504].randomElement(using: &random)!)
                }
            }
            // Requests without a range are dropped more often: that is what makes a resume.
            if chance(forRange ? 35 : 55) {
                step.drop = .init(beforeHead: chance(12), bodyFraction: Double.random(in: 0..<1, using: &random), reset: chance(50))
            }
            step.chunkSize = length > 256 << 10 ? Int.random(in: (64 << 10)...(256 << 10), using: &random)
                : Int.random(in: (2 << 10)...(64 << 10), using: &random)
            step.chunkDelayMicroseconds = chance(30) ? 0 : Int.random(in: 100...1500, using: &random)
            // Issue 38: framing, encoding and validators as real servers vary them (nginx
            // gzips whole answers under a weakened ETag, and never a range).
            step.chunked = chance(25)
            step.gzip = chance(forRange ? 10 : 25)
            step.weakensEntityTag = chance(10)
            step.validatorsOn416 = chance(50)
            step.keepsAlive = chance(40)
            return step
        }
        func skipping(_ step: AdversarialStep, forRange: Bool) -> AdversarialStep {
            var step = step
            if skips.contains(.changes) { step.change = nil }
            if skips.contains(.drops) { step.drop = nil }
            if skips.contains(.ignoringIfRange) { step.ignoresIfRange = false }
            if skips.contains(.gzip) { step.gzip = false }
            if skips.contains(.chunked) { step.chunked = false }
            if skips.contains(.weakenedEntityTags) { step.weakensEntityTag = false }
            if skips.contains(.validatorsOn416) { step.validatorsOn416 = false }
            if skips.contains(.keepAlive) { step.keepsAlive = false }
            let skipped: Bool = switch step.answer {
            case .status: skips.contains(forRange ? .statusWithRange : .statusWithoutRange)
            case .short206: skips.contains(.short206)
            case .overlapping206: skips.contains(.overlapping206)
            case .wrongStart206: skips.contains(.lateStart206)
            case .missingContentRange206: skips.contains(.missingContentRange)
            case .overlong206: skips.contains(.overlong206)
            case .unsatisfiable416: skips.contains(.unsatisfiable416)
            case .full200: skips.contains(.full200)
            case .unknownTotal206: skips.contains(.unknownTotal206)
            case .extreme206: skips.contains(.extreme206)
            case .redirect: skips.contains(.redirects)
            case .correct: false
            }
            if skipped { step.answer = .correct }
            return step
        }
        let script = (0..<(chance(15) ? 0 : Int.random(in: 1...3, using: &random))).map { _ in
            skipping(drawStep(forRange: false), forRange: false)
        }
        let rangeScript = (0..<(chance(10) ? 0 : Int.random(in: 1...6, using: &random))).map { _ in
            skipping(drawStep(forRange: true), forRange: true)
        }
        let resource = AdversarialResource(key: "c\(index)-\(String(seed, radix: 36))", entityTag: entityTag,
                                           sendsLastModified: sendsLastModified, datesAreWeak: datesAreWeak, length: length,
                                           contentSeed: random.next(),
                                           script: script, rangeScript: rangeScript)

        let toFile = mode == .writeLimited || chance(80)
        let route: Route
        switch mode {
        case .environmentProxy:
            route = chance(75) ? .httpsThroughEnvironmentProxy : .httpDefaultRoute
        case .inProcess, .writeLimited:
            route = switch Int.random(in: 0..<100, using: &random) {
            case 0..<34: .http
            case 34..<48: .https
            // nginx runs in the test's process only: a child goes over https instead.
            case 48..<64: mode == .inProcess ? .http2ThroughNginx : .https
            case 64..<78: .httpThroughProxy
            default: .httpsThroughConnect
            }
        }

        let runCount = toFile ? [1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4].randomElement(using: &random)! : 1
        var runs: [Run] = []
        for number in 0..<runCount {
            let start: Start
            if number == 0 {
                start = .fresh
            } else {
                start = switch Int.random(in: 0..<100, using: &random) {
                case 0..<50: .sidecar
                case 50..<80: .resumeData
                default: .sidecarAfterCrash(Double.random(in: 0...1, using: &random))
                }
            }
            var events: [Event] = []
            let eventCount = switch Int.random(in: 0..<100, using: &random) {
            case 0..<35: 0
            case 35..<70: 1
            case 70..<90: 2
            default: 3
            }
            for _ in 0..<eventCount {
                let trigger: Trigger = chance(70)
                    ? .bytes(Int64.random(in: 0...Int64(max(1, length)), using: &random))
                    : .milliseconds(Int.random(in: 0...40, using: &random))
                var action: Action = switch Int.random(in: 0..<100, using: &random) {
                case 0..<45: .pauseThenResume(Int.random(in: 0...20, using: &random))
                case 45..<55: .pauseAndResumeAtOnce
                case 55..<70: .pauseThenRestart
                case 70..<77: .cancel
                case 77..<93: .shutdown(pauseDownloads: chance(75), graceMilliseconds: Int.random(in: 0...50, using: &random))
                default: .strayResume
                }
                if !toFile, case .pauseThenRestart = action { action = .pauseThenResume(5) }
                events.append(Event(trigger: trigger, action: action))
            }
            runs.append(Run(start: start, retries: chance(25) ? 0 : Int.random(in: 1...4, using: &random),
                            retriesStatuses: chance(30), events: events))
        }
        var scenario = CampaignScenario(index: index, seed: seed, mode: mode, resource: resource, toFile: toFile, route: route, runs: runs)
        // Drawn last, so that every earlier draw of a seed stays what it was.
        scenario.toStream = !toFile && chance(40)
        for number in scenario.runs.indices where chance(35) {
            scenario.runs[number].post = Post(id: "c\(index)-\(String(seed, radix: 36))-\(number)", closeIfReused: chance(60),
                                              streamed: chance(50))
        }
        return scenario
    }
}
