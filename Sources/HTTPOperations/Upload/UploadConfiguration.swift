/// The protocols a resumable upload can speak.
public enum ResumableUploadProtocol: String, Sendable, Hashable, Codable, CaseIterable {
    /// tus 1.0.0 (<https://tus.io/protocols/resumable-upload>): core, with the creation,
    /// creation-with-upload, termination, checksum and expiration extensions.
    case tus
    /// The IETF HTTP working group's resumable uploads, draft-ietf-httpbis-resumable-upload-05
    /// (interop version 6; Docs/ResumableUploads.md says what of it is implemented).
    case ietfDraft
}

/// How a resumable upload sends its bytes and when it gives up. The defaults suit a server
/// application pushing files to a storage service over a link that sometimes drops.
public struct UploadConfiguration: Sendable, Equatable {
    /// The protocol the server speaks. `.tus`.
    public var uploadProtocol: ResumableUploadProtocol = .tus
    /// The most bytes one request carries (each is read from the source, off the network
    /// thread, into memory of this size: the upload's memory stays flat whatever the file's
    /// size). A drop costs at most this much sent again. 4 MiB.
    public var chunkSize = 4 << 20
    /// Whether the creation request carries the first chunk (tus's creation-with-upload, when
    /// the server advertises it; the IETF draft's creation always may). true.
    public var sendsDataWithCreation = true
    /// Whether each tus request carries an `Upload-Checksum` of its bytes, when the server
    /// advertises the checksum extension (the strongest algorithm both know: sha256, sha1,
    /// md5). A mismatch (460) sends the bytes again. true.
    public var usesChecksums = true
    /// tus `Upload-Metadata` pairs (a `filename`, a `filetype`, …), sent with the creation.
    /// Keys may not hold spaces or commas.
    public var metadata: [String: String] = [:]
    /// The wait after the first failed request, doubled after each further failure in a row.
    /// 500 ms.
    public var retryDelay: Duration = .milliseconds(500)
    /// The longest wait between two attempts. 30 s.
    public var maximumRetryDelay: Duration = .seconds(30)
    /// Each wait is drawn between the delay and `(1 + jitter)` times it. 0.2.
    public var jitter: Double = 0.2
    /// How many requests in a row may fail (a drop, a 5xx, a 409 or 460, a timeout) while the
    /// server acknowledges no byte more, before the upload fails with
    /// ``UploadError/Reason/retriesExhausted(attempts:)``. An acknowledged byte resets the
    /// count. 8.
    public var maximumConsecutiveFailures = 8
    /// Whether ``ResumableUploadOperation/cancel()`` also deletes the upload on the server
    /// (tus termination, the IETF draft's cancellation). false: a cancelled upload can still
    /// be resumed from its resume data.
    public var terminatesOnCancel = false

    /// The defaults.
    public init() {}
}
