import Foundation

// MARK: - One resource's state

/// A resource's versions, where its script is, and its log. A value: changed under the
/// server's lock, one request at a time.
struct ResourceState: Sendable {
    let resource: AdversarialResource
    var versions: [AdversarialVersion]
    var current: Int = 0
    var requests = 0
    var plainRequests = 0
    var rangeRequests = 0
    var nextEntityTag = 1
    var nextDate = 1
    var log: [String] = []
    /// See ``AdversarialResumeServer/settle(_:)``.
    var settled = false
    /// Some answers hide the complete length (chunked; gzipped, where the `Content-Length` is
    /// the encoded one; a 206 of unknown total, `bytes a-b/*`). Then the length cannot be what tells a new version from an earlier
    /// one with the same validators: a version whose length is its only mark, after a chunked
    /// answer for the earlier one, is a change no client can see.
    let lengthMayBeHidden: Bool

    init(_ resource: AdversarialResource) {
        self.resource = resource
        lengthMayBeHidden = (resource.entityTag != .none || resource.sendsLastModified)
            && (resource.script + resource.rangeScript).contains { step in
                if case .unknownTotal206 = step.answer { return true }
                return step.chunked || step.gzip
            }
        let first = AdversarialVersion(contentKey: AdversarialVersion.mix(resource.contentSeed), length: max(0, resource.length),
                                       entityTag: Self.entityTag(resource, 0), lastModified: Self.date(resource, 0))
        versions = [first]
    }

    static func entityTag(_ resource: AdversarialResource, _ number: Int) -> String? {
        switch resource.entityTag {
        case .strong: "\"\(resource.key)-e\(number)\""
        case .weak: "W/\"\(resource.key)-e\(number)\""
        case .none: nil
        }
    }

    /// Distinct dates a second apart, within one hour of one day (the weekday stays right).
    static func date(_ resource: AdversarialResource, _ number: Int) -> String? {
        guard resource.sendsLastModified else { return nil }
        let seconds = Int(resource.contentSeed % 1800) + number
        return String(format: "Sat, 21 Nov 2026 10:%02d:%02d GMT", (seconds / 60) % 60, seconds % 60)
    }

    /// What a client can see of a version on a 206.
    private func identity(_ version: AdversarialVersion) -> String {
        "\(version.entityTag ?? "")|\(version.lastModified ?? "")" + (lengthMayBeHidden ? "" : "|\(version.length)")
    }

    /// Applies a change; returns what happened, for the log.
    private mutating func apply(_ change: AdversarialStep.Change) -> String? {
        let now = versions[current]
        switch change {
        case .newContent(let newTag, let newDate, let length):
            var tag = now.entityTag
            var date = now.lastModified
            var newLength = max(0, length ?? now.length)
            if newTag, resource.entityTag != .none {
                tag = Self.entityTag(resource, nextEntityTag)
                nextEntityTag += 1
            }
            if newDate, resource.sendsLastModified {
                date = Self.date(resource, nextDate)
                nextDate += 1
            }
            // New bytes must look new to a client: differ from every earlier version in
            // something a 206 shows. Except where nothing a client sees is strong (weak dates,
            // no strong ETag): there a change may be invisible.
            let invisibleAllowed = resource.datesAreWeak && resource.entityTag != .strong
            let seen = invisibleAllowed ? [] : Set(versions.map(identity))
            func candidate() -> AdversarialVersion {
                AdversarialVersion(contentKey: AdversarialVersion.mix(resource.contentSeed &+ UInt64(versions.count)),
                                   length: newLength, entityTag: tag, lastModified: date)
            }
            if seen.contains(identity(candidate())) {
                if resource.entityTag != .none {
                    tag = Self.entityTag(resource, nextEntityTag)
                    nextEntityTag += 1
                } else if resource.sendsLastModified {
                    date = Self.date(resource, nextDate)
                    nextDate += 1
                } else {
                    while seen.contains(identity(candidate())) { newLength += 1 }
                }
            }
            versions.append(candidate())
            current = versions.count - 1
            return "changed to v\(current) (\(versions[current]))"
        case .newLength(let length):
            let grown = AdversarialVersion(contentKey: now.contentKey, length: max(0, length), entityTag: now.entityTag,
                                           lastModified: now.lastModified)
            if let same = versions.firstIndex(of: grown) {
                current = same
                return "length back to \(grown.length): v\(same)"
            }
            // The same look with other bytes would be a lie no client can see.
            guard !versions.contains(where: { $0.contentKey != grown.contentKey && identity($0) == identity(grown) }) else { return nil }
            versions.append(grown)
            current = versions.count - 1
            return "length changed to \(grown.length): v\(current) (same bytes)"
        }
    }

    /// Takes the next step for `request`; returns the response and the kinds to count.
    mutating func answer(_ request: AdversarialResumeServer.Request) -> (AdversarialResumeServer.Response, [String]) {
        let step: AdversarialStep
        if settled {
            step = AdversarialStep()
        } else if request.range != nil {
            step = rangeRequests < resource.rangeScript.count ? resource.rangeScript[rangeRequests] : AdversarialStep()
            rangeRequests += 1
        } else {
            step = plainRequests < resource.script.count ? resource.script[plainRequests] : AdversarialStep()
            plainRequests += 1
        }
        requests += 1
        var note = "#\(requests) \(request.method) Range: \(request.rawRange ?? "-"), If-Range: \(request.ifRange ?? "-")"
        var counted: [String] = []
        if let change = step.change {
            if let happened = apply(change) {
                note += " | \(happened)"
                counted.append(change.isNewContent ? "change: new content" : "change: length only")
            }
        }
        let version = versions[current]
        // A `Date` after every `Last-Modified` the server makes (all on 21 Nov 2026 before
        // 10:30): the dates are strong validators, as a real server's are (RFC 9110 §8.8.2.2);
        // or, with weak dates, the version's own `Last-Modified`: the same second.
        let later = "Sat, 21 Nov 2026 12:00:00 GMT"
        let date = resource.datesAreWeak ? version.lastModified ?? later : later
        var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes"),
                                           ("Date", date)]
        var validators: [(String, String)] = []
        if let tag = version.entityTag { validators.append(("ETag", tag)) }
        if let date = version.lastModified { validators.append(("Last-Modified", date)) }

        func whole() -> (Int, [(String, String)], [UInt8], String) {
            (200, headers + validators, version.content, "200 whole v\(current) (\(version.length) B)")
        }
        func partial(_ first: Int, _ last: Int, contentRange: Bool = true, named: String? = nil) -> (Int, [(String, String)], [UInt8], String) {
            var extra = validators
            let range = named ?? "bytes \(first)-\(last)/\(version.length)"
            if contentRange { extra.append(("Content-Range", range)) }
            let body = AdversarialVersion.bytes(key: version.contentKey, offset: first, count: last - first + 1)
            return (206, headers + extra, body,
                    "206 \(range) of v\(current)" + (contentRange ? "" : " without Content-Range") + (named == nil ? "" : " (\(last - first + 1) B)"))
        }
        func unsatisfiable() -> (Int, [(String, String)], [UInt8], String) {
            headers.append(("Content-Range", "bytes */\(version.length)"))
            let extra = step.validatorsOn416 ? validators : []
            return (416, headers + extra, Array("range not satisfiable\n".utf8),
                    "416 */\(version.length)" + (step.validatorsOn416 ? " with validators" : ""))
        }

        let matches: Bool = {
            guard let ifRange = request.ifRange, !step.ignoresIfRange else { return true }
            if ifRange.hasPrefix("\"") { return version.entityTag.map { $0.hasPrefix("\"") && $0 == ifRange } ?? false }
            if ifRange.hasPrefix("W/") { return false }
            return version.lastModified == ifRange
        }()

        let decided: (Int, [(String, String)], [UInt8], String)
        var kind = step.answer.kind
        switch step.answer {
        case .status(let code):
            decided = (code, [("Content-Type", "text/plain")], Array("status \(code) from the campaign\n".utf8), "\(code)")
        case .redirect(let code):
            decided = (code, [("Content-Type", "text/plain"), ("Location", "/r/\(resource.key)?hop=\(requests)")],
                       Array("moved\n".utf8), "\(code) to ?hop=\(requests)")
        case .full200:
            decided = whole()
        default:
            if let range = request.range, matches, range.first < version.length {
                let first = range.first
                let last = min(range.last ?? (version.length - 1), version.length - 1)
                let remaining = last - first + 1
                switch step.answer {
                case .short206(let fraction) where remaining >= 2:
                    decided = partial(first, first + min(remaining - 2, Int(fraction * Double(remaining - 1))))
                case .overlapping206(let fraction) where first > 0:
                    decided = partial(first - 1 - min(first - 1, Int(fraction * Double(first))), last)
                case .wrongStart206(let fraction) where remaining >= 2:
                    decided = partial(first + 1 + min(remaining - 2, Int(fraction * Double(remaining - 1))), last)
                case .missingContentRange206:
                    decided = partial(first, last, contentRange: false)
                case .overlong206(let fraction) where remaining >= 2:
                    let named = partial(first, first + min(remaining - 2, Int(fraction * Double(remaining - 1))))
                    let extra = remaining - named.2.count
                    // Bytes past the Content-Range that are no byte of any version.
                    decided = (named.0, named.1, named.2 + [UInt8](repeating: 0x5A, count: extra),
                               named.3 + ", then \(extra) B more than it names")
                case .unsatisfiable416:
                    decided = unsatisfiable()
                case .unknownTotal206:
                    decided = partial(first, last, named: "bytes \(first)-\(last)/*")
                case .extreme206:
                    decided = partial(first, last, named: "bytes \(first)-9223372036854775807/*")
                default:
                    kind = "correct"
                    decided = partial(first, last)
                }
            } else if request.range != nil, matches {
                kind = "correct"
                decided = unsatisfiable()
            } else {
                kind = "correct"
                decided = whole()
            }
        }
        counted.append((request.range == nil ? "no range: " : "range: ") + kind + (step.ignoresIfRange ? " (If-Range ignored)" : ""))
        var (status, fields, body, said) = decided
        let wholeVersion = status == 200 && body.count == version.length
        if step.gzip, wholeVersion, request.acceptsGzip, request.method != "HEAD" {
            body = StoredGzip.encode(body)
            fields += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
            said += ", gzipped"
            counted.append("gzip")
        }
        if step.weakensEntityTag || (step.gzip && wholeVersion && request.acceptsGzip) {
            fields = fields.map { name, value in
                name == "ETag" && value.hasPrefix("\"") ? (name, "W/" + value) : (name, value)
            }
            if version.entityTag?.hasPrefix("\"") == true {
                said += ", ETag sent weak"
                counted.append("ETag sent weak")
            }
        }
        if step.keepsAlive {
            said += ", kept alive"
            counted.append("kept alive")
        }
        if step.chunked, request.method != "HEAD" {
            said += ", chunked"
            counted.append("chunked")
        }
        note += " → " + said
        if let drop = step.drop {
            note += ", then \(drop)"
            counted.append("drop: " + (drop.reset ? "RST" : "FIN") + (drop.beforeHead ? " before head" : " in body"))
        }
        log.append(note)
        let response = AdversarialResumeServer.Response(status: status, headers: fields, body: body, drop: step.drop,
                                                         chunkSize: step.chunkSize,
                                                         chunkDelayMicroseconds: step.chunkDelayMicroseconds, chunked: step.chunked,
                                                         keepAlive: step.keepsAlive)
        return (response, counted)
    }
}

extension AdversarialStep.Change {
    var isNewContent: Bool {
        if case .newContent = self { return true }
        return false
    }
}

extension AdversarialStep.Answer {
    /// The kind, without its values.
    var kind: String {
        switch self {
        case .correct: "correct"
        case .full200: "200"
        case .short206: "short 206"
        case .overlapping206: "overlapping 206"
        case .wrongStart206: "late-start 206"
        case .missingContentRange206: "206 without Content-Range"
        case .overlong206: "overlong 206"
        case .unsatisfiable416: "416"
        case .status(let code): "status \(code)"
        case .unknownTotal206: "206 of unknown total"
        case .extreme206: "206 to byte Int64.max"
        case .redirect(let code): "redirect \(code)"
        }
    }
}
