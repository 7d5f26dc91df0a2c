import Foundation

extension TransferStateMachine {
    /// One transfer's facts: what the current request asked for and what its answer said so
    /// far. A new request starts a new one; each final head starts its answer's facts again.
    struct Attempt: Equatable {
        /// Which request of the operation this is, counted from 1 (0 before the first): the
        /// driver labels each transfer with it, and a late event of an earlier transfer (a
        /// pause and a resume were taken meanwhile in the caller's thread) is not this one's.
        var number = 0
        /// The offset the `Range` it *sent* asked for; nil when it sent none. Never changes
        /// during the attempt: a 206 is only ever read against what was sent.
        let sentFrom: Int64?
        /// The offset its answer is expected to continue from: `sentFrom`, until an answer
        /// restarts the body from byte 0 (then nil).
        var rangeFrom: Int64?
        /// Bytes of this attempt that went to the sink.
        var appended: Int64 = 0
        /// One past the last byte a 206's `Content-Range` names: the body may not run past it.
        var rangeEnd: Int64?
        /// Where the current response's body goes. `.sink` until a head says otherwise, so
        /// schemes without heads (file:) write to the sink.
        var route = BodyRoute.sink
        /// The status of the last final head, if any.
        var status: Int?
        /// Whether the last head had a `Location` (for 3xx).
        var hasLocation = false
        /// Bytes of the current response held aside.
        var asideBytes: Int64 = 0
        /// The current response is an error answer held aside (not one that may be replaced):
        /// in memory it may be as large as a memory body.
        var isErrorAnswer = false
        /// Why the machine stopped the transfer, which beats curl's word for it.
        var failure: Failure?
        /// A 416 said the bytes held are complete.
        var completeWithoutBody = false
        /// The range answer named another version than the bytes held: the transfer was
        /// stopped, and the whole resource is asked for again at once.
        var versionChanged = false
        /// The writer was full; curl holds a chunk until it has room.
        var waitingForWriter = false
        /// The credential was sent with it (for the challenge's failure count).
        var sentCredential = false
        /// Its answer is to be sent again, after at least this many seconds (`Retry-After`,
        /// 0 when the server named none).
        var retryAfter: TimeInterval?

        init(sentFrom: Int64? = nil, number: Int = 0) {
            self.number = number
            self.sentFrom = sentFrom
            self.rangeFrom = sentFrom
        }
    }
}

extension TransferStateMachine.Attempt {
    // The machine's types, named as the attempt's transitions use them.
    typealias HeldContent = TransferStateMachine.HeldContent
    typealias Configuration = TransferStateMachine.Configuration
    typealias HeadAction = TransferStateMachine.HeadAction
    typealias BodyAction = TransferStateMachine.BodyAction
    typealias Failure = TransferStateMachine.Failure

    /// A final head with `status` arrived: what the answer before it said is gone (curl may
    /// answer an authentication challenge itself on the same transfer, so one attempt can
    /// read several final heads).
    mutating func headArrived(status: Int) {
        self.status = status
        hasLocation = false
        asideBytes = 0
        isErrorAnswer = false
        rangeEnd = nil
        completeWithoutBody = false
        retryAfter = nil
    }

    /// `count` body bytes of the current answer arrived, bound where its head sent them; the
    /// sink's bytes are `held`. `admission` asks the sink whether it can take them now; it is
    /// asked only for bytes bound for the sink.
    mutating func admit(_ count: Int64, held: inout HeldContent, configuration: Configuration,
                        admission: () -> BodyWriter.Admission) -> BodyAction {
        switch route {
        case .aside:
            // In memory an error answer's body becomes the body: a memory body's limit. Else
            // the aside limit: an error answer for a file or stream is reported with what
            // fits; a body that may still be replaced (a redirect, a challenge) cannot be cut.
            let memoryLimit = isErrorAnswer ? configuration.maximumBodySize : nil
            let limit = memoryLimit ?? configuration.provisionalBodyLimit
            guard asideBytes + count <= limit else {
                // Cut, where it is reported apart; never where it becomes the body.
                if isErrorAnswer, memoryLimit == nil, !configuration.errorAnswerJoinsBody { return .discard }
                failure = memoryLimit != nil ? .bodyTooLarge(limit: limit) : .provisionalBodyTooLarge(limit: limit)
                return .abort
            }
            asideBytes += count
            return .divert
        case .sink:
            if let limit = configuration.maximumBodySize, held.count + count > limit {
                failure = .bodyTooLarge(limit: limit)
                return .abort
            }
            if let end = rangeEnd, held.count + count > end {
                // Bytes past what the Content-Range names are at no known offset.
                failure = .resume(.bodyExceedsContentRange(last: end - 1))
                return .abort
            }
            switch admission() {
            case .accepted:
                held.add(count)
                appended += count
                return .append
            case .wait:
                waitingForWriter = true
                return .wait
            case .failed(let error):
                failure = .write(error)
                return .abort
            }
        }
    }
}
