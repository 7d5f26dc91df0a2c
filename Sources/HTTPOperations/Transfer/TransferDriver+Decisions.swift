import Foundation

/// The caller's blocks that decide what is sent next: a redirect to follow or rewrite, a
/// credential for a challenge, trust in a server the policy accepted. Each is asked on the
/// callback queue (never on the network thread), and its answer comes back as a machine event.
extension TransferDriver {
    /// Works out the request that follows a redirect to `location` and asks the redirect
    /// block, if any, whether (or where) to follow it.
    func redirect(to location: String?) {
        let response = head!.httpURLResponse(for: request.url!)
        guard let location, let target = URL(string: location),
              ["http", "https"].contains(target.scheme?.lowercased() ?? "") else {
            return fail(URLError(.unsupportedURL, url: request.url,
                                 description: "Refusing to follow a redirect to \(location ?? "nowhere")."), response: response)
        }
        let proposed: URLRequest
        do {
            proposed = try RedirectPolicy.request(following: response.statusCode, from: request, to: target,
                                                  sensitiveFields: sensitiveHeaderFields)
        } catch {
            return fail(error, response: response)
        }
        log("redirect", [RequestLogging.statusKey: "\(response.statusCode)", "httpop.location": "\(RequestLogging.redacted(target))"])
        guard let redirectBlock else {
            request = proposed
            return decided(proceed: true)
        }
        let operation = self.operation
        callbackQueue.async(group: completionGroup) {
            let decision = redirectBlock(operation, proposed, response)
            NetworkThread.shared.perform {
                guard !self.withMachine({ $0.isFinished }) else { return }
                if let decision { self.request = decision }
                self.decided(proceed: decision != nil)
            }
        }
    }

    /// Asks the challenge block for a credential that answers the 401 or 407 received.
    func challenge(previousFailureCount: Int) {
        let response = head!.httpURLResponse(for: request.url!)
        let challenge = AuthenticationChallenge(response: response, previousFailureCount: previousFailureCount)
        let (operation, block) = (self.operation, challengeBlock!)
        callbackQueue.async(group: completionGroup) {
            let answer = block(operation, challenge)
            NetworkThread.shared.perform {
                guard !self.withMachine({ $0.isFinished }) else { return }
                if let answer, challenge.isProxyChallenge {
                    // A 407 came from the proxy: its answer goes to the proxy, never to the
                    // origin as the origin's credential.
                    self.inputs.proxyCredential = answer
                } else if let answer {
                    // The answer is for the origin that asked.
                    self.inputs.credential = answer
                    self.inputs.credentialOrigin = self.request.url
                }
                self.decided(proceed: answer != nil)
            }
        }
    }

    /// Asks the server-trust block on the callback queue; a yes is kept, so the request sent
    /// again goes through.
    func askServerTrust(_ trust: ServerTrust) {
        let (operation, evaluation) = (self.operation, inputs.serverTrustEvaluation!)
        callbackQueue.async(group: completionGroup) {
            let trusted = evaluation.block(operation, trust)
            if trusted { evaluation.approve(trust) }
            NetworkThread.shared.perform {
                guard !self.withMachine({ $0.isFinished }) else { return }
                self.decided(proceed: trusted)
            }
        }
    }

    /// Performs what the machine makes of a redirect, challenge or server-trust decision.
    func decided(proceed: Bool) {
        assertOnNetworkThread()
        let (action, attempt) = withMachine { ($0.decided(proceed: proceed), $0.attempt.number) }
        switch action {
        case .ignored: break
        case .send(let send): start(send, attempt: attempt)
        case .report(let outcome): report(outcome, of: nil)
        }
    }
}
