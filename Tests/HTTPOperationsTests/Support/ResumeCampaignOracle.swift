import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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

