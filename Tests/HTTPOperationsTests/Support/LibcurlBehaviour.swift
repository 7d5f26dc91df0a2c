@testable import HTTPOperations

/// What the libcurl loaded at run time is known to do differently, by version: the tests that
/// meet a libcurl's own defect keep it as a known issue on the versions measured to have it,
/// and insist on the right behaviour everywhere else. CI runs the suite on libcurl 8.14.1
/// (bookworm-backports) and the libcurl-sensitive suites again on Debian 12's 7.88.1
/// (Docs/Networking.md, "Which libcurl").
enum LibcurlBehaviour {
    /// 8.0.0: the versions below are 7.x.
    private static let eight = 0x08_00_00

    /// libcurl 7.88.1 passes HTTP/2 response trailers to no callback (neither its own
    /// `--trace-ascii` nor the header callback sees them); 8.14.1 delivers them.
    static var dropsHTTP2ResponseTrailers: Bool { Libcurl.versionNumber < eight }

    /// libcurl 7.88.1 now and then reports an HTTP/2 stream that the server reset, with the
    /// bytes before the reset, as complete when six streams share one connection.
    static var mayReportResetStreamsAsComplete: Bool { Libcurl.versionNumber < eight }

    /// libcurl 8 takes up a request that waits for a multiplexing connection
    /// (`CURLOPT_PIPEWAIT`) only when another transfer completes, not when the TLS handshake
    /// says `http/1.1` as 7.88.1 did (HTTP1Origins).
    static var holdsWaitingRequestsUntilATransferCompletes: Bool { Libcurl.versionNumber >= eight }

    /// libcurl 7.88.1 keeps an HTTP/2 request's body open after the stream's response ended,
    /// and ends the transfer only with the body: a duplex exchange whose body waits for the
    /// response's end stands still. 8.14.1 stops sending then (it does for any multiplexed
    /// stream), as both do on HTTP/1.1 for a response that closes its connection.
    static var keepsSendingAfterAnHTTP2ResponseEnded: Bool { Libcurl.versionNumber < eight }
}
