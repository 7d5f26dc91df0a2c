extension URLConnectionOperation {
    /// What an operation records from its start on: its transfer's state machine and what
    /// the transfer gave back beyond the response and its body.
    ///
    /// Kept out of line, made by the first write (at start, or a cancel before it): an
    /// operation waiting its turn holds 8 bytes for it rather than 1,131, and 20,000
    /// operations enqueued at once 22 MB less. Until then reads see ``initial``.
    struct TransferRecord {
        /// Every decision about the transfer, and the only record of whether it is paused or
        /// its outcome given (``TransferStateMachine/isFinished``; cancel() is then a no-op).
        var machine = TransferStateMachine(configuration: .init())
        /// The head of the final response as received; its `HTTPURLResponse` is built on
        /// first use, off the network thread (`HTTPURLResponse.init` is costly).
        var responseHead: (head: ResponseHead, url: URL)?
        /// The trailer fields after the final response's body, if it had any.
        var responseTrailers: ResponseHead?
        var timings: TransferTimings?
        var resumeData: ResumeData?
        var observation = Observation()
        /// The cache's plan for the request, from start to the answer (see `consultCache`).
        var cacheExchange: CacheExchange?

        /// What an operation that has not started reads; never written.
        nonisolated(unsafe) static let initial = TransferRecord()
    }

    /// The out-of-line storage of a ``TransferRecord``, owned by one operation's ``State``
    /// and only touched under its lock.
    final class TransferRecordStorage: @unchecked Sendable {
        // @unchecked Sendable and unchecked exclusivity: one operation's state holds it, and
        // every access is made under that state's lock (the dynamic check would cost each
        // access of the state machine a runtime call).
        @exclusivity(unchecked) var value = TransferRecord()
    }
}

extension URLConnectionOperation.State {
    /// The record, made by the first write.
    var record: URLConnectionOperation.TransferRecord {
        _read {
            // Not `??`: it would copy the record out of its storage on every read.
            if let storage = recordStorage { yield storage.value } else { yield URLConnectionOperation.TransferRecord.initial }
        }
        _modify {
            if recordStorage == nil { recordStorage = URLConnectionOperation.TransferRecordStorage() }
            yield &recordStorage!.value
        }
    }

    var machine: TransferStateMachine {
        _read { yield record.machine }
        _modify { yield &record.machine }
    }

    var responseHead: (head: ResponseHead, url: URL)? {
        _read { yield record.responseHead }
        _modify { yield &record.responseHead }
    }

    var responseTrailers: ResponseHead? {
        _read { yield record.responseTrailers }
        _modify { yield &record.responseTrailers }
    }

    var timings: TransferTimings? {
        _read { yield record.timings }
        _modify { yield &record.timings }
    }

    var resumeData: ResumeData? {
        _read { yield record.resumeData }
        _modify { yield &record.resumeData }
    }

    var observation: URLConnectionOperation.Observation {
        _read { yield record.observation }
        _modify { yield &record.observation }
    }

    var cacheExchange: URLConnectionOperation.CacheExchange? {
        _read { yield record.cacheExchange }
        _modify { yield &record.cacheExchange }
    }
}
