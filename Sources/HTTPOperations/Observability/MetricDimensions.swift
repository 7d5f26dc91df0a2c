import Foundation

/// The values of the dimensions the library's metrics carry. Each is drawn from a short, fixed
/// list, so a metrics backend never sees a new time series for a new URL, method or error
/// message: unbounded dimensions are how a client takes a metrics server down.
///
/// Each value is also known by its index in its list, so the instruments of one combination
/// are found in an array, without hashing strings per request.
enum MetricDimensions {
    /// The methods of RFC 9110 and PATCH, then `OTHER` for the rest.
    static let methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "OTHER"]
    /// `1xx` to `5xx`, then `none` when there was no HTTP response (or a status outside 100–599).
    static let statusClasses = ["1xx", "2xx", "3xx", "4xx", "5xx", "none"]
    /// What kind of failure an error is (see ``errorKindIndex(_:)``).
    static let errorKinds = ["none", "cancelled", "timeout", "dns", "connect", "tls", "security", "transport", "status",
                             "serialization", "request", "transfer", "resume", "integrity", "other"]

    /// The index of `method` in ``methods``: as sent (upper case, the common case, compares
    /// without a new string), else upper-cased.
    static func methodIndex(_ method: String?) -> Int {
        guard let method else { return 0 }
        if let index = methods.firstIndex(of: method) { return index }
        return methods.firstIndex(of: method.uppercased()) ?? methods.count - 1
    }

    /// The method as a dimension value.
    static func method(_ method: String?) -> String { methods[methodIndex(method)] }

    /// The index of the status's class in ``statusClasses``.
    static func statusClassIndex(_ status: Int?) -> Int {
        guard let status, (100..<600).contains(status) else { return statusClasses.count - 1 }
        return status / 100 - 1
    }

    /// The status class as a dimension value.
    static func statusClass(_ status: Int?) -> String { statusClasses[statusClassIndex(status)] }

    /// The index in ``errorKinds`` of what kind of failure `error` is:
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
    /// | `transfer` | ``TransferError``: a body too large, a request not resendable, a shutdown |
    /// | `resume` | ``ResumeError``: a server that answered a resume wrongly |
    /// | `integrity` | ``IntegrityError``: the body did not match its expected digest or length |
    /// | `other` | anything else, such as an error thrown by a subclass |
    static func errorKindIndex(_ error: (any Error)?) -> Int {
        switch error {
        case nil: 0
        case let error as URLError: urlErrorKindIndex(error.code)
        case is SecurityError: 6
        case is ResponseValidationError: 8
        case is ResponseSerializationError: 9
        case is RequestSerializationError: 10
        case is TransferError: 11
        case is ResumeError: 12
        case is IntegrityError: 13
        default: 14
        }
    }

    /// The kind of failure as a dimension value.
    static func errorKind(_ error: (any Error)?) -> String { errorKinds[errorKindIndex(error)] }

    private static func urlErrorKindIndex(_ code: URLError.Code) -> Int {
        switch code {
        case .cancelled: 1
        case .timedOut: 2
        case .cannotFindHost, .dnsLookupFailed: 3
        case .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet: 4
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected,
             .clientCertificateRequired:
            5
        default: 7
        }
    }
}
