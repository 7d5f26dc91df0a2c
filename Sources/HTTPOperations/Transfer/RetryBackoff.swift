import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the operations that come back after a failure (event streams, resumable uploads)
/// share: how long to wait, and which failures are worth another attempt.
enum RetryBackoff {
    /// `base` doubled for each failure in a row after the first, capped, then stretched by up
    /// to `jitter` of itself (`draw` in 0..<1), never above the cap (so never below `base`,
    /// unless `base` is above the cap).
    static func delay(base: Duration, cap: Duration, failures: Int, jitter: Double, draw: Double) -> Duration {
        var delay = min(base, cap)
        for _ in 1..<max(1, failures) where delay < cap {
            delay = min(delay * 2, cap)
        }
        let stretch = 1 + max(0, jitter) * min(max(draw, 0), 1)
        return min(delay * stretch, max(cap, delay))
    }

    /// Whether a request that ended with `error` is worth another: a transport failure is (the
    /// network or the server may come back); a refused certificate or pin, a bad URL, a body
    /// the client refuses, or any error the caller's own code threw is not. A connection that
    /// closed before the answer to a POST or PATCH is: the caller of this asks the server what
    /// it did (an upload's offset) before sending anything again.
    static func isWorthRetrying(after error: any Error) -> Bool {
        if error is ResponseValidationError { return true }
        if let error = error as? TransferError { return error.code == .connectionClosedBeforeAnswer }
        guard let error = error as? URLError else { return false }
        switch error.code {
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
             .serverCertificateNotYetValid, .clientCertificateRejected, .clientCertificateRequired,
             .secureConnectionFailed, .badURL, .unsupportedURL, .userAuthenticationRequired,
             .userCancelledAuthentication, .cancelled, .dataLengthExceedsMaximum:
            return false
        default:
            return true
        }
    }
}
