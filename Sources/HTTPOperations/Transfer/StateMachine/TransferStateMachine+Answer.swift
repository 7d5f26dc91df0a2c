import Foundation

/// How one attempt reads the final head of its answer: where its body goes, and whether the
/// bytes held are continued, started again or refused. The attempt's own facts change here;
/// the bytes held change only through ``TransferStateMachine/HeldContent``'s transitions.
extension TransferStateMachine.Attempt {
    /// Reads a final head (its status already checked and recorded by ``headArrived(status:)``):
    /// an answer to the `Range` it sent, or to a request for the whole resource.
    mutating func read(_ head: ResponseHead, held: inout HeldContent, metrics: inout DownloadMetrics,
                       configuration: Configuration, challenges: Int) -> HeadAction {
        if let from = rangeFrom {
            return readRangeAnswer(head, askedFrom: from, held: &held, metrics: &metrics, configuration: configuration,
                                   challenges: challenges)
        }
        return readWholeAnswer(head, held: &held, metrics: &metrics, configuration: configuration, challenges: challenges)
    }

    /// An answer to `Range: bytes=<from>-`: only a 206 at that offset, of the same version,
    /// adds to what is held.
    private mutating func readRangeAnswer(_ head: ResponseHead, askedFrom from: Int64, held: inout HeldContent,
                                          metrics: inout DownloadMetrics, configuration: Configuration,
                                          challenges: Int) -> HeadAction {
        // Another version's answer, whatever its range says (a server that ignores If-Range;
        // a new version of another length): the whole resource is asked for.
        if head.statusCode == 206 || head.statusCode == 416, let mismatch = held.mismatch(head) {
            return restartWhole(after: mismatch, held: &held, configuration: configuration)
        }
        switch ResumePolicy.decide(status: head.statusCode, contentRange: head.value(of: "Content-Range"),
                                   held: from, knownLength: held.knownLength) {
        case .append(let completeLength, let end):
            rangeEnd = end
            held.rangeAnswered(completeLength: completeLength)
            if let limit = configuration.maximumBodySize, let length = held.knownLength, length > limit {
                return abort(.bodyTooLarge(limit: limit))
            }
            route = .sink
            return .deliver(restartFromZero: false, newIdentity: false)
        case .restartFromZero:
            guard configuration.canRestart else { return abort(.resume(.cannotRestartOutputStream)) }
            held.drop(counting: &metrics)
            rangeFrom = nil
            // The whole resource: read like any answer to a plain request.
            let whole = readWholeAnswer(head, held: &held, metrics: &metrics, configuration: configuration, challenges: challenges)
            guard case .deliver = whole else { return whole }
            return .deliver(restartFromZero: true, newIdentity: true)
        case .alreadyComplete:
            // Complete only for the version held (another version's 416 was met above).
            completeWithoutBody = true
            route = .aside
            return .holdAside
        case .refuse(let reason) where reason.code == .lengthChanged || reason.code == .unsatisfiableRange:
            // Another complete length, or a range past the end: another version, shorter or
            // longer; asked for whole, as for a changed validator.
            return restartWhole(after: .resume(reason), held: &held, configuration: configuration)
        case .refuse(let reason):
            return abort(.resume(reason))
        case .notARangeAnswer:
            // A redirect is followed with the same range; any other answer (304, 4xx, 5xx, a
            // 3xx that cannot be followed) is reported with its body kept apart: never
            // appended to the bytes held.
            hasLocation = RedirectPolicy.redirectStatusCodes.contains(head.statusCode)
                && head.value(of: "Location") != nil
            route = .aside
            return .holdAside
        }
    }

    /// A range answer named another version than the bytes held: nothing of it is kept, the
    /// transfer is stopped, and the whole resource is asked for at once (a changed version is
    /// a restart, never a failure that every later attempt would meet again). Where the bytes
    /// held cannot be dropped (a caller's stream), or the server changes its version on every
    /// answer, it fails with `mismatch`.
    private mutating func restartWhole(after mismatch: Failure, held: inout HeldContent, configuration: Configuration) -> HeadAction {
        guard configuration.canRestart, held.restartWhole() else { return abort(mismatch) }
        versionChanged = true
        return .abort
    }

    /// An answer to a request for the whole resource (or for the caller's own range).
    private mutating func readWholeAnswer(_ head: ResponseHead, held: inout HeldContent, metrics: inout DownloadMetrics,
                                          configuration: Configuration, challenges: Int) -> HeadAction {
        if mayBeReplaced(head, configuration: configuration, challenges: challenges) {
            route = .aside
            return .holdAside
        }
        // An error answer (or a redirect nobody follows) is not the resource: its body is
        // held aside, never among the bytes held, so that neither a file nor a later range
        // can continue after it. In memory it becomes the body once it ended.
        // Where every status is an answer, an error answer is delivered as it comes, except a
        // 401 or 407 to a request with a credential: curl may answer that one itself on the
        // same transfer (it probes for the scheme first), and the answer after it is the one.
        let deliversEveryStatus = configuration.everyStatusIsTheBody
            && !((head.statusCode == 401 || head.statusCode == 407) && sentCredential)
        guard (200...299).contains(head.statusCode) || deliversEveryStatus else {
            route = .aside
            isErrorAnswer = true
            return .holdAside
        }
        // Part of a resource where none was asked for (a proxy's or a cache's answer to
        // another request): there is no offset to put it at.
        if head.statusCode == 206, !configuration.sendsOwnRange {
            return abort(.resume(.unrequestedPartialContent))
        }
        // The caller's own range asked again (after a pause or a drop): its answer starts the
        // body again, so what is held goes first.
        let restart = held.count > 0
        if restart {
            guard configuration.canRestart else { return abort(.resume(.cannotRestartOutputStream)) }
            held.drop(counting: &metrics)
        }
        route = .sink
        let newIdentity = held.wholeAnswer(head)
        // A HEAD's, a 204's or a 304's `Content-Length` is no body's (RFC 9110 §8.6).
        let hasBody = configuration.expectsBody && head.statusCode != 204 && head.statusCode != 304
        if hasBody, let limit = configuration.maximumBodySize, let length = head.decodedContentLength, length > limit {
            return abort(.bodyTooLarge(limit: limit))
        }
        return .deliver(restartFromZero: restart, newIdentity: newIdentity)
    }

    /// Whether a redirect or an authentication round may replace this response, so its body
    /// must wait aside.
    private mutating func mayBeReplaced(_ head: ResponseHead, configuration: Configuration, challenges: Int) -> Bool {
        if RedirectPolicy.redirectStatusCodes.contains(head.statusCode) {
            hasLocation = head.value(of: "Location") != nil
            return configuration.maximumRedirects > 0 && hasLocation
        }
        if head.statusCode == 401 || head.statusCode == 407 {
            return configuration.answersChallenges && challenges < configuration.maximumChallenges
        }
        return false
    }

    mutating func abort(_ failure: Failure) -> HeadAction {
        self.failure = failure
        return .abort
    }
}
