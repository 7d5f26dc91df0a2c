import Foundation
import Logging

/// What a transfer hands its operation when it ends, in one value: the answer, what the
/// transfers measured, and how the outcome is to be delivered. The operation's
/// ``URLConnectionOperation/conclude(_:)`` takes it. The error must always be named (nil for a
/// success), so a new caller cannot report a success by forgetting it; every other field has a
/// default, so an outcome found before any transfer (a request that could not be prepared, a
/// cancel before start, an answer from the cache) names only what it has.
struct TransferResult {
    // MARK: The answer

    /// The response; nil when there is none (or it is built from ``head``).
    var response: URLResponse?
    /// The head ``response`` was made from, if any.
    var head: ResponseHead?
    /// The trailer fields that followed the final response's body.
    var trailers: ResponseHead?
    /// The body kept in memory (or what arrived before a failure).
    var data: Data?
    /// The failure; nil for a success.
    var error: (any Error)?
    /// Whether the resource is complete, so its resume data is done with; nil means "when
    /// there is no error".
    var complete: Bool?

    // MARK: What the transfers measured

    /// For the timings, the metrics and the span.
    var timings: TransferTimings?
    /// Retries the transfers made.
    var retries = 0
    /// Resumes the transfers made.
    var resumes = 0

    // MARK: How it is delivered

    /// Where the outcome is logged ("request finished"), with its metadata.
    var log: (Logger, Logger.Metadata)?
    /// The queue the operation's other callbacks went through (serial when there were
    /// progress or informational callbacks), so the outcome comes after all of them; nil means
    /// the completion queue.
    var callbackQueue: DispatchQueue?
    /// The progress reporters whose last reports go out before the outcome.
    var progress: [ProgressReporter] = []
    /// A last check of a successful transfer (integrity), run on the callback queue before
    /// `processResponse()`; an error it returns fails the operation, unless it was cancelled
    /// meanwhile.
    var completionCheck: (@Sendable (Data?) -> (any Error)?)?
    /// On the network thread, the hand-off that batches the outcomes of one pass into one
    /// wake-up; nil dispatches now.
    var handoff: CallbackHandoff?

    /// Makes a result; see the fields.
    init(response: URLResponse? = nil, head: ResponseHead? = nil, trailers: ResponseHead? = nil, data: Data? = nil,
         error: (any Error)?, complete: Bool? = nil, timings: TransferTimings? = nil, retries: Int = 0, resumes: Int = 0,
         log: (Logger, Logger.Metadata)? = nil, callbackQueue: DispatchQueue? = nil, progress: [ProgressReporter] = [],
         completionCheck: (@Sendable (Data?) -> (any Error)?)? = nil, handoff: CallbackHandoff? = nil) {
        self.response = response
        self.head = head
        self.trailers = trailers
        self.data = data
        self.error = error
        self.complete = complete
        self.timings = timings
        self.retries = retries
        self.resumes = resumes
        self.log = log
        self.callbackQueue = callbackQueue
        self.progress = progress
        self.completionCheck = completionCheck
        self.handoff = handoff
    }

    /// An outcome with no answer: `error`, or a success with `data`.
    static func outcome(data: Data? = nil, error: (any Error)?) -> TransferResult {
        TransferResult(data: data, error: error)
    }
}
