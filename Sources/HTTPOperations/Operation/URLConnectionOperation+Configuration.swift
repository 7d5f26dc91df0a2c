import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import CoreMetrics
import Logging
import Synchronization

/// What the caller sets before the operation starts: its ``OperationConfiguration``, and what
/// belongs to this one request (where the body goes, how a download continues and is checked,
/// the blocks). Every setter here goes through ``changeSettings(_:_:)``, which refuses a change
/// once the transfer has read its settings (in `start()`, after `prepareRequest()`): it would
/// never see it.
extension URLConnectionOperation {
    /// What the operation shares with its client's other operations: completion queue and
    /// group, credential, total timeout, security policies, schemes, sensitive fields, route,
    /// cookies, cache, logger and metrics (see ``OperationConfiguration``). A manager gives the
    /// operations it makes its ``HTTPRequestOperationManager/defaultConfiguration``. Change it
    /// before the operation starts.
    ///
    /// Reading and writing it take the operation's lock once each: `configuration.x = y` from
    /// two threads at once may lose one change. Configure an operation from one thread.
    public var configuration: OperationConfiguration {
        get { state.withLock { $0.settings.configuration } }
        set { changeSettings("configuration") { $0.configuration = newValue } }
    }

    /// Where the response body goes. nil (the default) keeps it in memory as ``responseData``;
    /// a stream, for example `OutputStream(toFileAtPath:append:)`, receives it as it arrives.
    /// The operation opens and closes the stream.
    public var outputStream: OutputStream? {
        get { state.withLock { $0.settings.outputStream.value } }
        set {
            let handover = Handover(newValue)
            changeSettings("outputStream") { $0.outputStream = handover }
        }
    }

    /// The file the response body is written to, resumably; created if missing. Takes
    /// precedence over ``outputStream``. A paused or interrupted download to a file continues
    /// from the bytes on disk, and its ``resumeData`` is also saved beside it (see
    /// ``ResumeData/sidecarURL(for:)``) so another process can continue it.
    public var destinationURL: URL? {
        get { state.withLock { $0.settings.download.destination } }
        set { changeSettings("destinationURL") { $0.download.destination = newValue } }
    }

    /// Write to ``destinationURL`` even when it is a symbolic link. Default false: the file is
    /// opened with `O_NOFOLLOW`, and a link there (planted where a download was expected, to
    /// make it overwrite another file) fails the operation with ``SecurityError``
    /// `.destinationIsSymbolicLink` before anything is sent.
    public var followsSymbolicLinks: Bool {
        get { state.withLock { $0.settings.download.followsSymbolicLinks } }
        set { changeSettings("followsSymbolicLinks") { $0.download.followsSymbolicLinks = newValue } }
    }

    /// Continue the bytes already in ``destinationURL`` instead of starting it afresh, with
    /// `Range` only, as `curl -C -` does. With no validator the server cannot tell whether the
    /// resource changed, so prefer ``URLConnectionOperation/init(resumeData:)`` when you have it.
    public var resumesExistingFile: Bool {
        get { state.withLock { $0.settings.download.continuing } }
        set {
            changeSettings("resumesExistingFile") {
                $0.download.continuing = newValue
                $0.download.rangeWithoutValidator = newValue
            }
        }
    }

    /// How a download resumes itself after its connection drops. Default: three retries.
    public var retryPolicy: RetryPolicy {
        get { state.withLock { $0.settings.download.retryPolicy } }
        set { changeSettings("retryPolicy") { $0.download.retryPolicy = newValue } }
    }

    /// The SHA-256 the complete body must have, as hex; a mismatch fails the operation with
    /// ``IntegrityError`` and the download is not reported as complete.
    public var expectedSHA256: String? {
        get { state.withLock { $0.settings.download.expectedSHA256 } }
        set { changeSettings("expectedSHA256") { $0.download.expectedSHA256 = newValue?.lowercased() } }
    }

    /// The largest response body kept in memory (``outputStream`` and ``destinationURL`` unset).
    /// A body announced or grown beyond it stops the transfer and fails the operation with
    /// ``TransferError`` `.bodyTooLarge`. nil: no limit. Default 512 MiB. Bodies written to a
    /// file or stream have no limit: they never stay in memory.
    public var maximumBodySize: Int64? {
        get { state.withLock { $0.settings.download.maximumBodySize } }
        set { changeSettings("maximumBodySize") { $0.download.maximumBodySize = newValue.map { max(0, $0) } } }
    }

    /// The length the complete body must have; a mismatch fails the operation with
    /// ``IntegrityError``.
    public var expectedContentLength: Int64? {
        get { state.withLock { $0.settings.download.expectedLength } }
        set { changeSettings("expectedContentLength") { $0.download.expectedLength = newValue } }
    }

    /// How many redirects to follow before failing with `URLError(.httpTooManyRedirects)`;
    /// 0 follows none. Default 16. The operation's own: a manager does not set it.
    public var maximumRedirects: Int {
        get { state.withLock { $0.settings.maximumRedirects } }
        set { changeSettings("maximumRedirects") { $0.maximumRedirects = max(0, newValue) } }
    }

    /// Whom this request speaks for, when the cache cannot see it in the request: an API key
    /// in a field of your own, a tenant, a user your server acts for. A response stored for
    /// one partition (or for none) is never the answer to a request in another, as for
    /// requests with different `Authorization` or `Cookie` values; such responses stay in the
    /// cache's memory, never its folder. nil, the default: the request's fields alone tell.
    public var cachePartition: String? {
        get { state.withLock { $0.settings.cachePartition } }
        set { changeSettings("cachePartition") { $0.cachePartition = newValue } }
    }

    // MARK: AFNetworking 2's names for parts of the configuration

    /// The queue that callbacks run on: ``OperationConfiguration/completionQueue``.
    public var completionQueue: DispatchQueue? {
        get { configuration.completionQueue }
        set { changeSettings("completionQueue") { $0.configuration.completionQueue = newValue } }
    }

    /// A group that every callback enters while it runs: ``OperationConfiguration/completionGroup``.
    public var completionGroup: DispatchGroup? {
        get { configuration.completionGroup }
        set { changeSettings("completionGroup") { $0.configuration.completionGroup = newValue } }
    }

    /// The credential for Basic or Digest authentication (``OperationConfiguration/credential``).
    /// It is sent only to the origin of ``request`` (or of the manager's base URL), never to a
    /// host a redirect leads to.
    public var credential: URLCredential? {
        get { configuration.credential }
        set { changeSettings("credential") { $0.configuration.credential = newValue } }
    }

    /// How the TLS certificate of the request's host is trusted (pins, authorities, client
    /// certificate; see Docs/Security.md): that host's entry in
    /// ``OperationConfiguration/securityPolicies``. Default: the system's authorities, with the
    /// chain and the host name verified. A redirect to another host is trusted under that
    /// host's policy, so a lax policy set here never reaches another host.
    public var securityPolicy: SecurityPolicy {
        get { configuration.securityPolicies.policy(for: request.url?.host) }
        set {
            let host = request.url?.host
            changeSettings("securityPolicy") { settings in
                if let host {
                    settings.configuration.securityPolicies.setPolicy(newValue, for: host)
                } else {
                    settings.configuration.securityPolicies.fallback = newValue
                }
            }
        }
    }

    // MARK: Blocks

    /// Sets the block that judges each server this operation is about to send to, on each new
    /// connection, after the security policy accepted it: AFNetworking's
    /// `setWillSendRequestForAuthenticationChallengeBlock:` for server trust, on Linux.
    ///
    /// It runs on ``completionQueue``, never on the network thread: the transfer stops after
    /// the handshake, before any request byte, the block is asked, and a yes sends the request
    /// again on a new connection (a server is asked about once: its approval is kept for the
    /// operation, or for every operation of the manager that set the block). A no fails the
    /// operation with ``SecurityError`` `.serverTrustRefused`; nothing was sent. The block
    /// can refuse a server the policy accepts, never accept one it refused: to judge
    /// certificates no authority vouches for, combine it with `allowInvalidCertificates`.
    /// Released when the operation finishes.
    public func setServerTrustEvaluationBlock(_ block: ServerTrustEvaluationBlock?) {
        let evaluation = block.map(ServerTrustEvaluation.init)
        changeSettings("serverTrustEvaluationBlock") { $0.serverTrustEvaluation = evaluation }
    }

    /// Sets the block told about request-body bytes as curl takes them. Coalesced: a fast
    /// upload gets a few calls, each with the bytes since the previous one. Runs on
    /// ``completionQueue``.
    public func setUploadProgressBlock(_ block: TransferProgressBlock?) {
        changeSettings("uploadProgressBlock") { $0.uploadProgress = block }
    }

    /// Sets the block told about response-body bytes as they arrive. Coalesced like upload
    /// progress. Runs on ``completionQueue``.
    public func setDownloadProgressBlock(_ block: TransferProgressBlock?) {
        changeSettings("downloadProgressBlock") { $0.downloadProgress = block }
    }

    /// Sets the block that may rewrite or refuse each redirect. Without one, redirects are
    /// followed (up to ``maximumRedirects``) with the method rules of RFC 9110 §15.4. Runs on
    /// ``completionQueue``.
    public func setRedirectResponseBlock(_ block: RedirectResponseBlock?) {
        changeSettings("redirectResponseBlock") { $0.redirectBlock = block }
    }

    /// Sets the block asked for a credential when a response is 401 or 407 and no
    /// ``credential`` was accepted. Runs on ``completionQueue``.
    public func setAuthenticationChallengeBlock(_ block: AuthenticationChallengeBlock?) {
        changeSettings("authenticationChallengeBlock") { $0.challengeBlock = block }
    }

    // MARK: The gate

    /// Applies `change` to the settings until `start()` copies them for the transfer (after
    /// `prepareRequest()`, so a subclass may still configure itself there) or the outcome is
    /// given; afterwards the change is refused (see ``refuseLateChange(of:logger:)``).
    func changeSettings(_ setting: String, _ change: (inout Settings) -> Void) {
        let refusedWith = state.withLock { state -> Logger? in
            guard !state.settingsTaken, state.delivery < .observersTaken else { return state.settings.configuration.logger }
            change(&state.settings)
            return nil
        }
        if let logger = refusedWith { Self.refuseLateChange(of: setting, logger: logger) }
    }

    /// Whether a change after start fails an assertion (debug builds). Tests that show the
    /// refusal turn it off for their duration; nothing else does.
    static let lateChangesAssert = Atomic<Bool>(true)

    /// Says that a setting was changed after start and dropped: a warning in the operation's
    /// log, and in debug builds an assertion, since the change is a bug in the caller (the
    /// transfer read its settings at start and would never have seen it).
    static func refuseLateChange(of setting: String, logger: Logger) {
        logger.warning("a setting changed after the operation started was dropped",
                       metadata: ["httpop.setting": "\(setting)"])
        if lateChangesAssert.load(ordering: .relaxed) {
            assertionFailure("HTTPOperations: \(setting) was changed after the operation started; set it before")
        }
    }
}
