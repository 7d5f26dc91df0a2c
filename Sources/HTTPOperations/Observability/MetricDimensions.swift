import Foundation

/// The values of the dimensions the library's metrics carry. Each is drawn from a short, fixed
/// list, so a metrics backend never sees a new time series for a new URL, method or error
/// message: unbounded dimensions are how a client takes a metrics server down.
enum MetricDimensions {
    /// The method as sent, when it is one of the methods of RFC 9110 or PATCH; `OTHER` for the rest.
    static func method(_ method: String?) -> String {
        let method = method?.uppercased() ?? "GET"
        return knownMethods.contains(method) ? method : "OTHER"
    }

    private static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    /// `1xx` to `5xx`, or `none` when there was no HTTP response (or a status outside 100–599).
    static func statusClass(_ response: URLResponse?) -> String {
        guard let status = (response as? HTTPURLResponse)?.statusCode, (100..<600).contains(status) else { return "none" }
        return statusClasses[status / 100 - 1]
    }

    private static let statusClasses = ["1xx", "2xx", "3xx", "4xx", "5xx"]

    /// What kind of failure `error` is, in one word of a fixed list:
    ///
    /// | value | errors |
    /// |---|---|
    /// | `none` | success |
    /// | `cancelled` | `URLError.cancelled` |
    /// | `timeout` | `URLError.timedOut` (idle or total timeout) |
    /// | `dns` | the host name did not resolve |
    /// | `connect` | no connection, or it was lost |
    /// | `tls` | the TLS handshake or the server's certificate failed |
    /// | `security` | ``SecurityError``: a pin, the server-trust block, a refused header or scheme |
    /// | `transport` | any other `URLError` |
    /// | `status` | ``ResponseValidationError``: an unacceptable status code or content type |
    /// | `serialization` | ``ResponseSerializationError``: the body did not parse |
    /// | `request` | ``RequestSerializationError``: the request could not be built |
    /// | `transfer` | ``TransferError``: a body too large, a request not resendable |
    /// | `resume` | ``ResumeError``: a server that answered a resume wrongly |
    /// | `integrity` | ``IntegrityError``: the body did not match its expected digest or length |
    /// | `other` | anything else, such as an error thrown by a subclass |
    static func errorKind(_ error: (any Error)?) -> String {
        switch error {
        case nil: "none"
        case let error as URLError: urlErrorKind(error.code)
        case is SecurityError: "security"
        case is ResponseValidationError: "status"
        case is ResponseSerializationError: "serialization"
        case is RequestSerializationError: "request"
        case is TransferError: "transfer"
        case is ResumeError: "resume"
        case is IntegrityError: "integrity"
        default: "other"
        }
    }

    private static func urlErrorKind(_ code: URLError.Code) -> String {
        switch code {
        case .cancelled: "cancelled"
        case .timedOut: "timeout"
        case .cannotFindHost, .dnsLookupFailed: "dns"
        case .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet: "connect"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected,
             .clientCertificateRequired:
            "tls"
        default: "transport"
        }
    }
}
