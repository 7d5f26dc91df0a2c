/// How an event stream reconnects and what it accepts. The defaults follow what browsers'
/// `EventSource` does, bounded for a server that must not hang or grow without limit.
public struct EventStreamConfiguration: Sendable, Equatable {
    /// How long to wait before reconnecting until the server sends a `retry` field
    /// (the standard leaves it to the client; browsers wait a few seconds), and the least
    /// the backoff starts from when connections fail in a row, whatever the server's `retry`
    /// (from the second failure). 3 s.
    public var reconnectionDelay: Duration = .seconds(3)
    /// The longest wait before a reconnection, whatever the server's `retry` or the backoff
    /// after failures asks. 60 s.
    public var maximumReconnectionDelay: Duration = .seconds(60)
    /// Each wait is drawn between the delay and `(1 + jitter)` times it, so that clients cut
    /// off together do not come back together (never above ``maximumReconnectionDelay``). 0.2.
    public var jitter: Double = 0.2
    /// How many connections in a row may end before any of an event stream's body arrived
    /// (refused by a 429/502/503/504, failed before or at the answer, or closed before its
    /// first byte) before the stream fails with
    /// ``EventStreamError/Reason/reconnectsExhausted(attempts:)``; each such failure doubles
    /// the wait. A connection that read anything, a comment included, resets the count. nil:
    /// reconnect for ever. 10.
    public var maximumConsecutiveFailures: Int? = 10
    /// The most bytes one event may hold (its data and its longest line together) before
    /// the stream fails with ``EventStreamError/Reason/eventTooLarge(limit:)``. 1 MiB.
    public var maximumEventBytes = 1 << 20

    /// Whether a stream whose request is not idempotent (a POST, as model APIs stream their
    /// answers) reconnects, sending the request again. false: it never does (the library never
    /// sends a POST twice unless told); its clean end is the end of the stream (no error), a
    /// drop fails it, and ``EventStreamOperation/pause()`` does nothing. false.
    public var reconnectsNonIdempotentRequests = false

    /// The defaults.
    public init() {}
}
