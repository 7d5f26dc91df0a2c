/// A download that arrived whole but is not what was expected; it is not reported complete.
public struct IntegrityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of ``IntegrityError``.
    public typealias Code = ErrorCode<IntegrityError>

    /// What did not match, with the values. Compare with the static members, or compare
    /// ``code`` to ignore the values.
    public struct Reason: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case lengthMismatch(expected: Int64, actual: Int64)
            case checksumMismatch(expected: String, actual: String)
        }

        let kind: Kind

        /// The body's length.
        public static func lengthMismatch(expected: Int64, actual: Int64) -> Reason {
            Reason(kind: .lengthMismatch(expected: expected, actual: actual))
        }

        /// The body's SHA-256, as lowercase hex.
        public static func checksumMismatch(expected: String, actual: String) -> Reason {
            Reason(kind: .checksumMismatch(expected: expected, actual: actual))
        }

        /// The kind, without the values.
        public var code: Code {
            switch kind {
            case .lengthMismatch: .lengthMismatch
            case .checksumMismatch: .checksumMismatch
            }
        }
    }

    /// What did not match.
    public let reason: Reason

    /// The kind of failure: `reason.code`.
    public var code: Code { reason.code }

    /// Creates an error.
    public init(reason: Reason) {
        self.reason = reason
    }

    /// A sentence naming what was expected and what arrived.
    public var description: String {
        switch reason.kind {
        case .lengthMismatch(let expected, let actual):
            "The download is \(actual) bytes long, not the expected \(expected); it is not complete."
        case .checksumMismatch(let expected, let actual):
            "The download's SHA-256 is \(actual), not the expected \(expected); it is not complete."
        }
    }
}

extension ErrorCode where Domain == IntegrityError {
    /// See ``IntegrityError/Reason/lengthMismatch(expected:actual:)``.
    public static var lengthMismatch: Self { Self("lengthMismatch") }
    /// See ``IntegrityError/Reason/checksumMismatch(expected:actual:)``.
    public static var checksumMismatch: Self { Self("checksumMismatch") }
}
