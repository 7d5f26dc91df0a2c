extension URLConnectionOperation {
    /// What an operation records from its start on: its transfer's state machine and what
    /// the transfer gave back beyond the response and its body.
    ///
    /// Kept out of line, made by the first write (at start, or a cancel before it): an
    /// operation waiting its turn holds 8 bytes for it rather than 1,131, and 20,000
    /// operations enqueued at once 22 MB less. Until then it holds and reads
    /// ``initialRecordStorage``.
    struct TransferRecord: Sendable {
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
    }

    /// The out-of-line storage of a ``TransferRecord``: one operation's own, or
    /// ``initialRecordStorage``. Safe to send by ``SharedBox``'s rule: an operation's own
    /// storage is held by its state alone and touched only under that state's lock, and the
    /// initial one is only read.
    typealias TransferRecordStorage = SharedBox<TransferRecord>

    /// What every operation that has not started holds and reads; never written (the first
    /// write replaces it with a storage of the operation's own).
    static let initialRecordStorage = TransferRecordStorage(TransferRecord())
}

extension URLConnectionOperation.State {
    /// The record, made by the first write.
    var record: URLConnectionOperation.TransferRecord {
        // One path each, straight to the storage: a read that chose between two sources
        // (a storage or `initial`) would copy the record out on every read.
        _read { yield recordStorage.value }
        _modify {
            if recordStorage === URLConnectionOperation.initialRecordStorage {
                recordStorage = URLConnectionOperation.TransferRecordStorage(URLConnectionOperation.TransferRecord())
            }
            yield &recordStorage.value
        }
    }

    // The record's fields by name, written out rather than through a dynamic-member key path:
    // the machine is reached on every event of every transfer.
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
