import Foundation

/// Why an event stream stopped with an error of its own (a refused answer is a
/// ``ResponseValidationError``; a transport failure a `URLError`). Every event dispatched
/// before it was delivered; none after it.
public struct EventStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of ``EventStreamError``.
    public typealias Code = ErrorCode<EventStreamError>

    /// What went wrong, with its values. Compare with the static members, or compare ``code``
    /// to ignore the values.
    public struct Reason: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case eventTooLarge(limit: Int)
            case reconnectsExhausted(attempts: Int)
        }

        let kind: Kind

        /// An event (its data and its longest line together) grew past `limit` bytes
        /// (``EventStreamConfiguration/maximumEventBytes``): the server is sending something that
        /// is not a sane event stream, and the client stopped holding it.
        public static func eventTooLarge(limit: Int) -> Reason { Reason(kind: .eventTooLarge(limit: limit)) }

        /// `attempts` connections in a row ended before reading any of the stream's body
        /// (``EventStreamConfiguration/maximumConsecutiveFailures``); the last one's error is
        /// ``EventStreamError/underlyingError``.
        public static func reconnectsExhausted(attempts: Int) -> Reason { Reason(kind: .reconnectsExhausted(attempts: attempts)) }

        /// The kind, without the values.
        public var code: Code {
            switch kind {
            case .eventTooLarge: .eventTooLarge
            case .reconnectsExhausted: .reconnectsExhausted
            }
        }
    }

    /// What went wrong.
    public let reason: Reason
    /// The stream's URL, when known.
    public let url: URL?
    /// The error of the last connection, for ``Reason/reconnectsExhausted(attempts:)``.
    public let underlyingError: (any Error)?

    /// The kind of failure: `reason.code`.
    public var code: Code { reason.code }

    /// Creates an error.
    public init(reason: Reason, url: URL? = nil, underlyingError: (any Error)? = nil) {
        self.reason = reason
        self.url = url
        self.underlyingError = underlyingError
    }

    /// Equal when the reasons and URLs are (the underlying errors are not compared).
    public static func == (lhs: EventStreamError, rhs: EventStreamError) -> Bool {
        lhs.reason == rhs.reason && lhs.url == rhs.url
    }

    /// A sentence naming what went wrong.
    public var description: String {
        let source = url.map { " from \($0.absoluteString)" } ?? ""
        switch reason.kind {
        case .eventTooLarge(let limit):
            return "An event\(source) grew past \(limit) bytes; the stream was stopped."
        case .reconnectsExhausted(let attempts):
            let last = underlyingError.map { " The last: \($0)" } ?? ""
            return "The event stream\(source) failed \(attempts) connections in a row without reading any of the stream's body.\(last)"
        }
    }
}

extension ErrorCode where Domain == EventStreamError {
    /// See ``EventStreamError/Reason/eventTooLarge(limit:)``.
    public static var eventTooLarge: Self { Self("eventTooLarge") }
    /// See ``EventStreamError/Reason/reconnectsExhausted(attempts:)``.
    public static var reconnectsExhausted: Self { Self("reconnectsExhausted") }
}

extension EventStreamError: HTTPOperationsError {}
