import Foundation

/// How an operation stores, continues and checks its download. Part of its state.
struct DownloadConfiguration {
    /// The file the body goes to.
    var destination: URL?
    /// Keep the bytes already in `destination` and ask for the rest.
    var continuing = false
    /// What identifies the version those bytes belong to (from resume data).
    var validator: ResumeValidator?
    /// The complete length known before starting (from resume data).
    var knownLength: Int64?
    var retryPolicy = RetryPolicy.default
    var expectedSHA256: String?
    var expectedLength: Int64?
}
