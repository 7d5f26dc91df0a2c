import CCurl
import Foundation

/// What libcurl said when a transfer failed: its numeric `CURLcode` and its message.
///
/// Transport failures reach users as `URLError`, with the code they know (`.timedOut`,
/// `.cannotConnectToHost`, ...); this value rides along as the underlying error
/// (`NSUnderlyingErrorKey`, or ``Foundation/URLError/curlError``) so nothing curl knew is lost.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `CURLcode`, such as 7 for `CURLE_COULDNT_CONNECT`.
    public let code: Int
    /// curl's detailed message for this transfer when it gave one, else its generic text.
    public let message: String

    /// Creates a value from a `CURLcode` and an optional detailed message.
    public init(code: Int, message: String) {
        self.code = code
        self.message = message
    }

    init(_ code: CURLcode, detail: String?) {
        let generic = String(cString: curl_easy_strerror(code))
        let detail = detail.flatMap { $0.isEmpty ? nil : $0 }
        self.init(code: Int(code.rawValue), message: detail ?? generic)
    }

    /// `curl error 7: Failed to connect to 127.0.0.1 port 1: Connection refused`.
    public var description: String { "curl error \(code): \(message)" }

    /// The `URLError` code users know for this failure.
    ///
    /// Two of curl's codes cover more than one failure, and its message tells them apart: a
    /// reply that is not HTTP at all comes as `CURLE_UNSUPPORTED_PROTOCOL` ("Received HTTP/0.9
    /// when not allowed", "Unsupported response code in HTTP response", in libcurl 8
    /// "Unsupported HTTP/1 subversion in response"), which otherwise means a URL scheme curl may
    /// not use; broken chunked framing and oversized response headers come as
    /// `CURLE_RECV_ERROR`, which otherwise means the connection failed. Those are the server's
    /// fault: `.badServerResponse`.
    ///
    /// A proxy that refuses to open a `CONNECT` tunnel also comes as `CURLE_RECV_ERROR`
    /// ("CONNECT tunnel failed, response 407"): `.userAuthenticationRequired` when it asked for
    /// credentials, `.cannotConnectToHost` otherwise.
    var urlErrorCode: URLError.Code {
        if message.hasPrefix("CONNECT tunnel failed") {
            return message.hasSuffix("response 407") ? .userAuthenticationRequired : .cannotConnectToHost
        }
        if isMalformedResponse { return .badServerResponse }
        return switch CURLcode(rawValue: UInt32(code)) {
        case CURLE_UNSUPPORTED_PROTOCOL: .unsupportedURL
        case CURLE_URL_MALFORMAT: .badURL
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .cannotFindHost
        case CURLE_COULDNT_CONNECT, CURLE_PROXY: .cannotConnectToHost
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_PARTIAL_FILE, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2_STREAM: .networkConnectionLost
        case CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP2, CURLE_GOT_NOTHING, CURLE_RANGE_ERROR: .badServerResponse
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND,
             CURLE_SSL_CIPHER, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR:
            .secureConnectionFailed
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS:
            .serverCertificateUntrusted
        case CURLE_SSL_CERTPROBLEM, CURLE_SSL_CLIENTCERT: .clientCertificateRejected
        case CURLE_FILE_COULDNT_READ_FILE, CURLE_REMOTE_FILE_NOT_FOUND: .fileDoesNotExist
        case CURLE_REMOTE_ACCESS_DENIED: .noPermissionsToReadFile
        case CURLE_WRITE_ERROR: .cannotWriteToFile
        case CURLE_READ_ERROR, CURLE_SEND_FAIL_REWIND: .requestBodyStreamExhausted
        case CURLE_BAD_CONTENT_ENCODING: .cannotDecodeContentData
        case CURLE_FILESIZE_EXCEEDED: .dataLengthExceedsMaximum
        case CURLE_TOO_MANY_REDIRECTS: .httpTooManyRedirects
        case CURLE_LOGIN_DENIED, CURLE_AUTH_ERROR: .userAuthenticationRequired
        case CURLE_ABORTED_BY_CALLBACK: .cancelled
        default: .unknown
        }
    }

    /// Whether curl refused what the server sent as malformed HTTP (see ``urlErrorCode``).
    private var isMalformedResponse: Bool {
        switch CURLcode(rawValue: UInt32(code)) {
        // libcurl 7.88.1 says "Unsupported response code in HTTP response", 8.14.1 "Unsupported
        // HTTP/1 subversion in response"; a reused connection that answers in another version,
        // "Version mismatch". A scheme it may not use is "Protocol "x" not supported": a
        // scheme's name may hold any word ("x-response") but never a space, so the phrases
        // below, which start with one, cannot come from it.
        case CURLE_UNSUPPORTED_PROTOCOL: message.contains("HTTP/0.9") || message.contains(" in HTTP response")
            || message.contains(" in response") || message.hasPrefix("Version mismatch")
        // 7.88.1: "... in chunked-encoding"; 8.14.1: "chunk hex-length ...", "invalid chunk size".
        case CURLE_RECV_ERROR: message.contains("chunked-encoding") || message.contains("chunk hex-length")
            || message.contains("invalid chunk size") || message.contains("header")
        default: false
        }
    }
}

extension URLError {
    /// A `URLError` for a failed transfer of `url`, with `curl` as its underlying error.
    init(_ curl: CurlError, url: URL?) {
        var info: [String: Any] = [
            NSUnderlyingErrorKey: curl,
            NSLocalizedDescriptionKey: curl.message,
        ]
        if let url {
            info[NSURLErrorFailingURLErrorKey] = url
        }
        self.init(curl.urlErrorCode, userInfo: info)
    }

    /// A `URLError` that the library raises itself (not curl), for `url`.
    init(_ code: URLError.Code, url: URL?, description: String) {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let url {
            info[NSURLErrorFailingURLErrorKey] = url
        }
        self.init(code, userInfo: info)
    }

    /// The libcurl failure behind this error, when curl reported it.
    public var curlError: CurlError? {
        userInfo[NSUnderlyingErrorKey] as? CurlError
    }
}
