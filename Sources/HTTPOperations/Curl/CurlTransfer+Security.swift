import CCurl
import CTLSPath
import Foundation

/// How a ``SecurityPolicy`` and the allowed schemes become libcurl options, and the pin check
/// that runs between the handshake and the first byte of the request.
extension CurlTransfer {
    /// Sets the options of a transfer that is not plain (on a handle reset to curl's
    /// defaults): what differs from the defaults for its policy and schemes.
    func configureSecurity() {
        if let allowed = request.allowedSchemes {
            let schemes = allowed.sorted().joined(separator: ",")
            setString(CURLOPT_PROTOCOLS_STR, schemes)
            setString(CURLOPT_REDIR_PROTOCOLS_STR, schemes)
        }
        let policy = request.securityPolicy
        let evaluation = request.serverTrustEvaluation
        guard policy != .default || evaluation != nil else { return }
        // A server-trust block keeps its operations' connections apart too: its identity
        // heads the blob.
        if let anchors = evaluation.map({ $0.anchors(for: policy) }) ?? policy.anchors {
            // The anchors in memory, the policy's identity on their first line. libcurl
            // compares CA blobs when it looks for a connection to reuse, so a connection made
            // (and checked) under this policy serves no other, and none made under another
            // serves this one. Without a CA file or folder the blob is all that is trusted.
            setString(CURLOPT_CAINFO, nil)
            setString(CURLOPT_CAPATH, nil)
            anchors.withUnsafeBytes { bytes in
                _ = ccurl_easy_setopt_blob(easy, CURLOPT_CAINFO_BLOB, bytes.baseAddress, bytes.count)
            }
        }
        if policy.allowInvalidCertificates {
            setLong(CURLOPT_SSL_VERIFYPEER, 0)
        }
        // libcurl checks the name with OpenSSL even when the chain is not verified: allowing
        // invalid certificates does not turn this off.
        setLong(CURLOPT_SSL_VERIFYHOST, policy.validatesDomainName ? 2 : 0)
        // 1.2 is set for every transfer (`configureShared`).
        if policy.minimumTLSVersion == .v1_3 {
            setLong(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_3))
        }
        if let identity = policy.clientIdentity {
            configureClientIdentity(identity)
        }
        // Pins and the block judge TLS servers; a plain http request has no path to check.
        if policy.pinningMode != .none || evaluation != nil, request.url.scheme?.lowercased() == "https" {
            // A resumed TLS session has no verified path (no certificates were exchanged):
            // every new connection does a full handshake.
            setLong(CURLOPT_SSL_SESSIONID_CACHE, 0)
            checksServerTrust = true
        }
    }

    private func configureClientIdentity(_ identity: ClientIdentity) {
        setString(CURLOPT_SSLCERTTYPE, "PEM")
        setString(CURLOPT_SSLKEYTYPE, "PEM")
        switch identity.certificate {
        case .file(let url): setString(CURLOPT_SSLCERT, url.path)
        case .pem(let data): setBlob(CURLOPT_SSLCERT_BLOB, data)
        }
        switch identity.privateKey {
        case .file(let url): setString(CURLOPT_SSLKEY, url.path)
        case .pem(let data): setBlob(CURLOPT_SSLKEY_BLOB, data)
        }
        // Always a passphrase, empty when none was given: without one OpenSSL asks for it on
        // the terminal, on the network thread, when a key file turns out to be encrypted
        // (one renewed since the identity was made). An empty one fails at once instead.
        setString(CURLOPT_KEYPASSWD, identity.passphrase ?? "")
    }

    private func setBlob(_ option: CURLoption, _ data: Data) {
        data.withUnsafeBytes { bytes in
            _ = ccurl_easy_setopt_blob(easy, option, bytes.baseAddress, bytes.count)
        }
    }

    /// From `CURLOPT_PREREQFUNCTION` (``CurlTransfer/preRequest()``): the connection is made
    /// (TLS included) or reused, and nothing is sent yet. Compares the path the connection was verified on with the pins, for every
    /// transfer (a reused connection and a multiplexed HTTP/2 stream are checked like a new
    /// one); on a refusal, aborts the transfer and forbids reuse, so the connection is closed
    /// rather than kept for the next request.
    ///
    /// Then, with a server-trust block, a server the block has not approved stops here too, and
    /// the block is asked off the network thread (``pendingServerTrust``); the request is sent
    /// again once it says yes.
    func checkServerTrust() -> Int32 {
        let host = request.url.host ?? ""
        let check = ServerTrustCheck(policy: request.securityPolicy, host: host)
        // Parsed once, for the pins and for the block.
        let certificates: [TLSCertificate]
        switch check.parse(verifiedPath(), cache: NetworkThread.shared.multi.verifiedPaths) {
        case .success(let parsed): certificates = parsed
        case .failure(let refusal): return refuse(SecurityError(refusal.reason, url: request.url))
        }
        if let refusal = check.evaluate(certificates: certificates) {
            return refuse(SecurityError(refusal.reason, url: request.url))
        }
        if let evaluation = request.serverTrustEvaluation {
            let trust = ServerTrust(host: host, port: request.url.port ?? 443, certificates: certificates,
                                    policy: request.securityPolicy)
            if !evaluation.isApproved(trust) {
                pendingServerTrust = trust
                setLong(CURLOPT_FORBID_REUSE, 1)
                return Int32(ccurl_prereqfunc_abort)
            }
        }
        return Int32(ccurl_prereqfunc_ok)
    }

    /// Records `refusal`, and aborts without leaving the connection for another request.
    private func refuse(_ refusal: SecurityError) -> Int32 {
        trustFailure = refusal
        setLong(CURLOPT_FORBID_REUSE, 1)
        return Int32(ccurl_prereqfunc_abort)
    }

    /// The DER of each certificate on the path OpenSSL verified for this transfer's
    /// connection, leaf first, anchor last (see `ctlspath.h`); nil when there is none (no TLS
    /// session, another TLS backend, a session resumed without certificates).
    private func verifiedPath() -> [Data]? {
        var pointer: UnsafeMutableRawPointer?
        guard ccurl_easy_getinfo_pointer(easy, CURLINFO_TLS_SSL_PTR, &pointer) == CURLE_OK, let pointer else { return nil }
        let session = pointer.assumingMemoryBound(to: curl_tlssessioninfo.self).pointee
        guard session.backend == CURLSSLBACKEND_OPENSSL, let ssl = session.internals else { return nil }
        var path: [Data] = []
        let count = withUnsafeMutablePointer(to: &path) { path in
            httpop_tls_verified_path(ssl, path) { context, der, length in
                guard let context, let der else { return }
                context.assumingMemoryBound(to: [Data].self).pointee.append(Data(bytes: der, count: length))
            }
        }
        return count > 0 ? path : nil
    }
}
