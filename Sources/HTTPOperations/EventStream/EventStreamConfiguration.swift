/// How an event stream reconnects and what it accepts. The defaults follow what browsers'
/// `EventSource` does, bounded for a server that must not hang or grow without limit.
public struct EventStreamConfiguration: Sendable, Equatable {
    /// How long to wait before reconnecting until the server sends a `retry` field
    /// (the standard leaves it to the client; browsers wait a few seconds). 3 s.
    public var reconnectionDelay: Duration = .seconds(3)
    /// The longest wait before a reconnection, whatever the server's `retry` or the backoff
    /// after failures asks. 60 s.
    public var maximumReconnectionDelay: Duration = .seconds(60)
    /// Each wait is drawn between the delay and `(1 + jitter)` times it, so that clients cut
    /// off together do not come back together (never shorter than the server asked). 0.2.
    public var jitter: Double = 0.2
    /// How many connections in a row may end before delivering an event (refused by a
    /// 502/503/504, failed, or closed at once) before the stream fails with
    /// ``EventStreamError/Reason/reconnectsExhausted(attempts:)``; each such failure doubles
    /// the wait. nil: reconnect for ever. 10.
    public var maximumConsecutiveFailures: Int? = 10
    /// The most bytes one event may hold (its data and its longest line together) before
    /// the stream fails with ``EventStreamError/Reason/eventTooLarge(limit:)``. 1 MiB.
    public var maximumEventBytes = 1 << 20

    /// The defaults.
    public init() {}
}
