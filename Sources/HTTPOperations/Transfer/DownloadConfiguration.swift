import Foundation

/// How an operation stores, continues and checks its download. Part of its state.
struct DownloadConfiguration {
    /// The file the body goes to.
    var destination: URL?
    /// Keep the bytes already in `destination` and ask for the rest.
    var continuing = false
    /// The caller vouches for the bytes held without naming their version
    /// (``URLConnectionOperation/resumesExistingFile``, `curl -C -`): a `Range` alone may
    /// continue them. Resume data that names no strong validator does not.
    var rangeWithoutValidator = false
    /// What identifies the version those bytes belong to (from resume data).
    var validator: ResumeValidator?
    /// Every validator saved with those bytes (from resume data), checked on each 206.
    var entityTag: String?
    var lastModified: String?
    /// The complete length known before starting (from resume data).
    var knownLength: Int64?
    var retryPolicy = RetryPolicy.default
    var expectedSHA256: String?
    var expectedLength: Int64?
    /// Open `destination` even when it is a symbolic link (else `O_NOFOLLOW` refuses it).
    var followsSymbolicLinks = false
    /// The largest body held in memory; nil for no limit.
    var maximumBodySize: Int64? = DownloadConfiguration.defaultMaximumBodySize

    /// 512 MiB: far above what an API answers, far below what takes a server down.
    static let defaultMaximumBodySize: Int64 = 512 << 20
}
