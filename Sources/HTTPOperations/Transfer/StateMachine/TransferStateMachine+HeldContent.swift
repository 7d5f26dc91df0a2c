import Foundation

extension TransferStateMachine {
    /// The bytes held in the sink and the version of the resource they are of: what a `Range`
    /// continues, and what its answer must match. One owner for these facts: every change to
    /// them is one of the named transitions below, made by the machine.
    struct HeldContent: Equatable {
        /// Bytes held in the sink: what a `Range` continues from.
        private(set) var count: Int64 = 0
        /// Their version, as sent in `If-Range`.
        private(set) var validator: ResumeValidator?
        /// Every validator the server named for that version (the ETag, strong or weak, and the
        /// Last-Modified date): each is compared with a 206's, whichever `If-Range` carried, so a
        /// server that ignores `If-Range` cannot splice another version.
        private(set) var entityTag: String?
        private(set) var lastModified: String?
        /// Whether a `Range` may continue them: their version has a strong validator to send in
        /// `If-Range`, or the caller vouches for them without one (`-C`). A version known by
        /// nothing stronger (a weak ETag, a `Last-Modified` less than a second before the
        /// `Date`, nothing), from a 200 or from resume data, cannot be told from the next: its
        /// bytes are asked for again whole.
        private(set) var isNamed = true
        /// The resource's complete length, when known.
        private(set) var knownLength: Int64?
        /// The length progress reports expect: the complete length, or -1 when unknown.
        private(set) var expectedLength: Int64 = -1
        /// The status of the whole answer they are of (a range continues only a 2xx's).
        private(set) var answerStatus: Int?
        /// How often a range answer named another version and the resource was asked for whole.
        private(set) var versionRestarts = 0
        /// A server that changes the version on every answer is asked for it whole this often.
        static let maximumVersionRestarts = 3

        /// Nothing held yet, of a version known from resume data (or of none).
        ///
        /// - Parameters:
        ///   - validator: The validator of the bytes already held.
        ///   - entityTag, lastModified: Every validator saved with them; when nil, the one
        ///     `validator` names.
        ///   - knownLength: Their resource's complete length.
        ///   - rangeWithoutValidator: The caller vouches for bytes held without a validator.
        init(validator: ResumeValidator? = nil, entityTag: String? = nil, lastModified: String? = nil,
             knownLength: Int64? = nil, rangeWithoutValidator: Bool = false) {
            // A tag that is not strong (`W/"x"`, from resume data written elsewhere) is no
            // validator `If-Range` may carry (RFC 9110 §13.1.5): the bytes held are unnamed.
            var validator = validator
            if case .entityTag(let tag)? = validator, !tag.hasPrefix("\"") { validator = nil }
            self.validator = validator
            self.isNamed = validator != nil || rangeWithoutValidator
            switch validator {
            case .entityTag(let tag)?: self.entityTag = entityTag ?? tag
            case .lastModified(let date)?: self.lastModified = lastModified ?? date
            case nil: break
            }
            self.entityTag = self.entityTag ?? entityTag
            self.lastModified = self.lastModified ?? lastModified
            self.knownLength = knownLength
            self.expectedLength = knownLength ?? -1
        }

        /// The offset a `Range` continues from, or nil when the request starts over: nothing
        /// held, the caller's own range, bytes of an error answer (delivered where every
        /// status is an answer: no prefix of the resource, a `Range` would splice it on), or
        /// a version no validator names.
        func rangeStart(sendsOwnRange: Bool) -> Int64? {
            let continuable = answerStatus.map { (200...299).contains($0) } ?? true
            return count > 0 && !sendsOwnRange && continuable && isNamed ? count : nil
        }

        /// The refusal when `head` names another version than the one held: its `ETag` or its
        /// `Last-Modified` differs from the one saved with the bytes held.
        func mismatch(_ head: ResponseHead) -> Failure? {
            if let expected = entityTag, let received = head.value(of: "ETag"), received != expected {
                return .resume(.validatorChanged(expected: expected, received: received))
            }
            if let expected = lastModified, let received = head.value(of: "Last-Modified"), received != expected {
                return .resume(.validatorChanged(expected: expected, received: received))
            }
            return nil
        }

        /// The transfer begins with `count` bytes already in the sink (a file continued).
        mutating func begin(with count: Int64) {
            self.count = count
        }

        /// `count` more bytes reached the sink.
        mutating func add(_ count: Int64) {
            self.count += count
        }

        /// The bytes held are dropped (the resource is fetched from byte 0); `metrics` counts it.
        mutating func drop(counting metrics: inout DownloadMetrics) {
            metrics.restartsFromZero += 1
            metrics.bytesRefetched += count
            count = 0
        }

        /// A range answer named another version than theirs: the next request asks for the
        /// resource whole. False when it has been asked for whole too often already (a server
        /// that changes the version on every answer).
        mutating func restartWhole() -> Bool {
            guard versionRestarts < Self.maximumVersionRestarts else { return false }
            versionRestarts += 1
            isNamed = false
            return true
        }

        /// A 206 named the resource's complete length (or none).
        mutating func rangeAnswered(completeLength: Int64?) {
            knownLength = completeLength ?? knownLength
            expectedLength = knownLength ?? -1
        }

        /// A whole answer with `head` starts the bytes held: a 200 names their version and
        /// length; any status is the one a later range must continue. True when it changed
        /// the version named (the resume data is then saved again).
        mutating func wholeAnswer(_ head: ResponseHead) -> Bool {
            answerStatus = head.statusCode
            let length = head.decodedContentLength
            expectedLength = length ?? -1
            guard head.statusCode == 200 else {
                // Another status's bytes (a 203 of a transforming proxy) are of no version a
                // validator names: the one saved for earlier bytes must never continue them.
                let named = isNamed || validator != nil || entityTag != nil || lastModified != nil
                (validator, entityTag, lastModified, knownLength, isNamed) = (nil, nil, nil, nil, false)
                return named
            }
            let (etag, modified) = (head.value(of: "ETag"), head.value(of: "Last-Modified"))
            // `Date` only judges a `Last-Modified` that stands alone: not looked up otherwise.
            let date = etag == nil && modified != nil ? head.value(of: "Date") : nil
            validator = ResumeValidator(etag: etag, lastModified: modified, date: date)
            isNamed = validator != nil
            (entityTag, lastModified) = (etag, modified)
            knownLength = length
            return true
        }
    }
}
