import Foundation

/// What a ``TransferDriver`` gives every transfer it starts besides the request itself: the
/// credentials and where they may go, the security policies, the schemes allowed, the route
/// and the cookie store.
///
/// Kept as one value so that the first transfer (worked out in the connection's `init`, on
/// the thread that starts the operation) and every later one (redirects, authentication
/// rounds, resumes and retries, on the network thread) are built by the same code from the
/// same inputs. A challenge block's answer changes ``credential`` and ``credentialOrigin``,
/// or ``proxyCredential`` for a proxy's 407; the rest is fixed for the operation.
struct TransferInputs {
    /// The credential for the origin of ``credentialOrigin``.
    var credential: URLCredential?
    /// The URL whose origin ``credential`` belongs to: the first request's for the
    /// operation's credential, the challenged request's for a challenge block's answer.
    var credentialOrigin: URL?
    /// The answer to a proxy's 407: sent to the proxy only (`CURLOPT_PROXYUSERNAME`), for
    /// every later transfer of the operation, never to an origin.
    var proxyCredential: URLCredential?
    let securityPolicies: HostSecurityPolicies
    let allowedSchemes: Set<String>?
    let serverTrustEvaluation: ServerTrustEvaluation?
    /// Proxy, Unix socket and host overrides.
    let route: NetworkRoute
    /// The cookies to send and keep, for every transfer whose request handles cookies.
    let cookieStore: CookieStore?

    /// The inputs an operation's settings give its transfers; `request` is the first one,
    /// whose origin a credential without one (an operation's own) is for.
    init(_ settings: borrowing URLConnectionOperation.Settings, request: URLRequest) {
        // Read in place: a copy of the whole configuration would retain each of its references
        // once more per operation started.
        credential = settings.configuration.credential
        credentialOrigin = credential == nil ? nil : settings.configuration.credentialOrigin ?? request.url
        securityPolicies = settings.configuration.securityPolicies
        // The explicit set only: nil (the defaults) keeps a plain GET plain (``TransferRequest/isPlain``).
        allowedSchemes = settings.configuration.explicitSchemes
        serverTrustEvaluation = settings.serverTrustEvaluation
        route = settings.configuration.route
        cookieStore = settings.configuration.cookieStore
    }

    /// What curl needs to send `request`, with the credential only where it belongs and the
    /// security policy of the host it goes to.
    ///
    /// - Throws: What ``TransferRequest/init(_:credential:allowedSchemes:)`` throws for a
    ///   request curl must not send.
    func transferRequest(for request: URLRequest) throws -> TransferRequest {
        // The credential belongs to the origin it was given for, not to wherever a redirect
        // leads. (Foundation's URL parses its host on each call: asked only when there is a
        // credential to give.)
        let sendsCredential = credential != nil
            && (request.url.flatMap { url in credentialOrigin.map { RedirectPolicy.isSameOrigin($0, url) } } ?? false)
        var transferRequest = try TransferRequest(request, credential: sendsCredential ? credential : nil,
                                                  allowedSchemes: allowedSchemes)
        transferRequest.securityPolicy = securityPolicies.policy(forHostOf: transferRequest.url)
        transferRequest.serverTrustEvaluation = serverTrustEvaluation
        transferRequest.route = route
        if request.httpShouldHandleCookies { transferRequest.cookieStore = cookieStore }
        if let proxyCredential, let user = proxyCredential.user {
            transferRequest.proxyCredential = (user, proxyCredential.password ?? "")
        }
        return transferRequest
    }
}
