import Foundation

/// Where the time of an operation went: from libcurl's `CURLINFO_*_TIME_T` for the transfer
/// that gave the response, plus what came before it (redirects, authentication rounds,
/// resumes and retries are transfers of their own). A value, safe to keep and log.
///
/// The phases of ``lastTransfer`` are measured from that transfer's start, as libcurl does:
/// `nameLookup <= connect <= tlsHandshake <= requestSent <= firstByte <= total`. On a reused
/// connection the first four are (close to) zero.
public struct TransferTimings: Sendable, Hashable, CustomStringConvertible {
    /// One curl transfer.
    public struct Transfer: Sendable, Hashable {
        /// Until the host name was resolved (`CURLINFO_NAMELOOKUP_TIME_T`).
        public var nameLookup: Duration
        /// Until the TCP connection was made (`CURLINFO_CONNECT_TIME_T`).
        public var connect: Duration
        /// Until the TLS handshake was done (`CURLINFO_APPCONNECT_TIME_T`); zero without TLS.
        public var tlsHandshake: Duration
        /// Until the request was about to be sent (`CURLINFO_PRETRANSFER_TIME_T`).
        public var requestSent: Duration
        /// Until the first byte of the response arrived (`CURLINFO_STARTTRANSFER_TIME_T`).
        public var firstByte: Duration
        /// Until the transfer ended (`CURLINFO_TOTAL_TIME_T`).
        public var total: Duration
        /// The transfer used a connection an earlier one left open (`CURLINFO_NUM_CONNECTS` 0).
        public var reusedConnection: Bool
        /// The HTTP version spoken: "1.0", "1.1", "2" or "3"; nil for other schemes.
        public var httpVersion: String?
        /// Request body bytes sent (`CURLINFO_SIZE_UPLOAD_T`).
        public var bytesSent: Int64
        /// Response body bytes received, as they came off the wire (`CURLINFO_SIZE_DOWNLOAD_T`).
        public var bytesReceived: Int64

        /// Creates the timings of one transfer.
        public init(nameLookup: Duration = .zero, connect: Duration = .zero, tlsHandshake: Duration = .zero,
                    requestSent: Duration = .zero, firstByte: Duration = .zero, total: Duration = .zero,
                    reusedConnection: Bool = false, httpVersion: String? = nil, bytesSent: Int64 = 0, bytesReceived: Int64 = 0) {
            self.nameLookup = nameLookup
            self.connect = connect
            self.tlsHandshake = tlsHandshake
            self.requestSent = requestSent
            self.firstByte = firstByte
            self.total = total
            self.reusedConnection = reusedConnection
            self.httpVersion = httpVersion
            self.bytesSent = bytesSent
            self.bytesReceived = bytesReceived
        }
    }

    /// The transfer that gave the response (or the last one tried).
    public var lastTransfer: Transfer
    /// How many curl transfers the operation made: 1, plus one per redirect followed,
    /// authentication round, resume and retry.
    public var transfers: Int
    /// How many redirects were followed.
    public var redirects: Int
    /// The time of every transfer before the last one (`CURLINFO_TOTAL_TIME_T`, summed).
    public var beforeLastTransfer: Duration
    /// Request body bytes sent by every transfer.
    public var bytesSent: Int64
    /// Response body bytes received by every transfer (redirect and error bodies included).
    public var bytesReceived: Int64
    /// How many of the ``transfers`` used a connection an earlier transfer left open.
    public var transfersOnReusedConnections: Int

    /// The time spent in transfers: ``beforeLastTransfer`` plus the last one's total (pauses,
    /// retry waits and block decisions between transfers not included).
    public var total: Duration { beforeLastTransfer + lastTransfer.total }

    /// Creates the timings of an operation whose only transfer is `lastTransfer`.
    public init(lastTransfer: Transfer) {
        self.lastTransfer = lastTransfer
        self.transfers = 1
        self.redirects = 0
        self.beforeLastTransfer = .zero
        self.bytesSent = lastTransfer.bytesSent
        self.bytesReceived = lastTransfer.bytesReceived
        self.transfersOnReusedConnections = lastTransfer.reusedConnection ? 1 : 0
    }

    /// Adds a transfer that came after the others; it becomes ``lastTransfer``.
    public mutating func append(_ transfer: Transfer) {
        beforeLastTransfer += lastTransfer.total
        lastTransfer = transfer
        transfers += 1
        bytesSent += transfer.bytesSent
        bytesReceived += transfer.bytesReceived
        if transfer.reusedConnection { transfersOnReusedConnections += 1 }
    }

    /// One line, in milliseconds: `dns 0.1 connect 0.3 tls 2.0 sent 2.1 first byte 5.0 total 5.2 (HTTP/2, new connection, 1 transfer)`.
    public var description: String {
        func ms(_ duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            return String(format: "%.1f", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
        }
        let last = lastTransfer
        let version = last.httpVersion.map { "HTTP/\($0)" } ?? "no HTTP"
        return "dns \(ms(last.nameLookup)) connect \(ms(last.connect)) tls \(ms(last.tlsHandshake)) sent \(ms(last.requestSent))"
            + " first byte \(ms(last.firstByte)) total \(ms(total)) (\(version), \(last.reusedConnection ? "reused" : "new") connection,"
            + " \(transfers) transfer\(transfers == 1 ? "" : "s"), \(redirects) redirect\(redirects == 1 ? "" : "s"))"
    }
}

extension Notification {
    /// The key of the ``TransferTimings`` in the `userInfo` of
    /// `networkingOperationDidFinish` (absent when no transfer ran: cancelled before start, a
    /// request that could not be built).
    public static let transferTimingsKey = "HTTPOperations.transferTimings"
}
