import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why a resumed download was refused rather than spliced, or why saved resume data cannot be
/// read. Nothing was appended; the bytes already held are intact.
public struct ResumeError: Error, Sendable, CustomStringConvertible {
    /// The kinds of ``ResumeError``.
    public typealias Code = ErrorCode<ResumeError>

    /// What was wrong with the server's answer (or with saved resume data), with the values it
    /// named. Compare with the static members
    /// (`error.reason == .rangeStartMismatch(expected: 100, received: 200)`), or compare
    /// ``code`` to ignore the values.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        enum Kind: Sendable, Hashable {
            case rangeStartMismatch(expected: Int64, received: Int64)
            case malformedContentRange(String?)
            case lengthChanged(expected: Int64, received: Int64)
            case unsatisfiableRange(held: Int64, length: Int64?)
            case cannotRestartOutputStream
            case validatorChanged(expected: String, received: String)
            case unrequestedPartialContent
            case incomplete(held: Int64, length: Int64)
            case unexpectedStatus(Int)
            case bodyExceedsContentRange(last: Int64)
            case unsupportedResumeDataVersion(found: Int, readable: Int)
        }

        let kind: Kind

        /// A 206 whose range starts elsewhere than the bytes already held.
        public static func rangeStartMismatch(expected: Int64, received: Int64) -> Reason {
            Reason(kind: .rangeStartMismatch(expected: expected, received: received))
        }

        /// A 206 without a `Content-Range`, or one that does not parse.
        public static func malformedContentRange(_ value: String?) -> Reason {
            Reason(kind: .malformedContentRange(value))
        }

        /// The complete length differs from the one known before.
        public static func lengthChanged(expected: Int64, received: Int64) -> Reason {
            Reason(kind: .lengthChanged(expected: expected, received: received))
        }

        /// A 416 whose complete length is not the number of bytes held.
        public static func unsatisfiableRange(held: Int64, length: Int64?) -> Reason {
            Reason(kind: .unsatisfiableRange(held: held, length: length))
        }

        /// The server restarted the body (200) and the output stream cannot be rewound.
        public static var cannotRestartOutputStream: Reason { Reason(kind: .cannotRestartOutputStream) }

        /// A 206 for another version of the resource than the one whose bytes are held.
        public static func validatorChanged(expected: String, received: String) -> Reason {
            Reason(kind: .validatorChanged(expected: expected, received: received))
        }

        /// A 206 to a request that asked for no range: a partial body that cannot be placed
        /// (for example a proxy's or a cache's answer to another request).
        public static var unrequestedPartialContent: Reason { Reason(kind: .unrequestedPartialContent) }

        /// The server ended with fewer bytes than the resource's complete length (a 206 shorter
        /// than the rest, as CDNs that cap ranges send), and the retry policy allows no further
        /// request. The bytes held are a true prefix; the resume data names them.
        public static func incomplete(held: Int64, length: Int64) -> Reason {
            Reason(kind: .incomplete(held: held, length: length))
        }

        /// A 2xx other than 200 and 206 answering a range request: neither part of the
        /// resource nor the whole of it, so the download is not complete (a 203, a 204).
        public static func unexpectedStatus(_ status: Int) -> Reason {
            Reason(kind: .unexpectedStatus(status))
        }

        /// A 206 whose body runs past the last byte its `Content-Range` names: the bytes after
        /// it are at no known offset. Nothing past that byte was appended.
        public static func bodyExceedsContentRange(last: Int64) -> Reason {
            Reason(kind: .bodyExceedsContentRange(last: last))
        }

        /// Resume data written by a version of the library whose format this one does not
        /// read: `found` is its format version, `readable` the one this library reads.
        public static func unsupportedResumeDataVersion(found: Int, readable: Int) -> Reason {
            Reason(kind: .unsupportedResumeDataVersion(found: found, readable: readable))
        }

        /// The kind, without the values.
        public var code: Code {
            switch kind {
            case .rangeStartMismatch: .rangeStartMismatch
            case .malformedContentRange: .malformedContentRange
            case .lengthChanged: .lengthChanged
            case .unsatisfiableRange: .unsatisfiableRange
            case .cannotRestartOutputStream: .cannotRestartOutputStream
            case .validatorChanged: .validatorChanged
            case .unrequestedPartialContent: .unrequestedPartialContent
            case .incomplete: .incomplete
            case .unexpectedStatus: .unexpectedStatus
            case .bodyExceedsContentRange: .bodyExceedsContentRange
            case .unsupportedResumeDataVersion: .unsupportedResumeDataVersion
            }
        }

        /// What was refused, as a clause.
        public var description: String {
            switch kind {
            case .rangeStartMismatch(let expected, let received):
                "the server sent bytes from \(received), but \(expected) bytes are held"
            case .malformedContentRange(let value):
                "the 206 response has \(value.map { "an unreadable Content-Range '\($0)'" } ?? "no Content-Range")"
            case .lengthChanged(let expected, let received):
                "the resource is now \(received) bytes long, not \(expected)"
            case .unsatisfiableRange(let held, let length):
                "the server refused the range (416) for \(length.map(String.init) ?? "an unknown number of") bytes while \(held) are held"
            case .cannotRestartOutputStream:
                "the server sent the whole resource again and the output stream cannot be rewound"
            case .validatorChanged(let expected, let received):
                "the server sent part of version \(received), but the bytes held are of version \(expected)"
            case .unrequestedPartialContent:
                "the server sent part of the resource (206) to a request that asked for no range"
            case .incomplete(let held, let length):
                "the server stopped after \(held) of \(length) bytes and no further request is allowed"
            case .unexpectedStatus(let status):
                "the server answered the range with \(status), which is neither part of the resource (206) nor all of it (200)"
            case .bodyExceedsContentRange(let last):
                "the 206 response's body runs past byte \(last), the last its Content-Range names"
            case .unsupportedResumeDataVersion(let found, let readable):
                "the resume data's format is version \(found); this library reads version \(readable)"
            }
        }
    }

    /// What was wrong.
    public let reason: Reason
    /// The response that was refused, when there was one.
    public let response: HTTPURLResponse?

    /// The kind of failure: `reason.code`.
    public var code: Code { reason.code }

    /// Creates an error for `reason`.
    public init(_ reason: Reason, response: HTTPURLResponse? = nil) {
        self.reason = reason
        self.response = response
    }

    /// A sentence saying what was refused and why.
    public var description: String {
        if reason.code == .unsupportedResumeDataVersion {
            return "Resume data refused: \(reason). Nothing was read from it."
        }
        return "Resume refused: \(reason). Nothing was appended; the bytes already held are intact."
    }
}

extension ErrorCode where Domain == ResumeError {
    /// See ``ResumeError/Reason/rangeStartMismatch(expected:received:)``.
    public static var rangeStartMismatch: Self { Self("rangeStartMismatch") }
    /// See ``ResumeError/Reason/malformedContentRange(_:)``.
    public static var malformedContentRange: Self { Self("malformedContentRange") }
    /// See ``ResumeError/Reason/lengthChanged(expected:received:)``.
    public static var lengthChanged: Self { Self("lengthChanged") }
    /// See ``ResumeError/Reason/unsatisfiableRange(held:length:)``.
    public static var unsatisfiableRange: Self { Self("unsatisfiableRange") }
    /// See ``ResumeError/Reason/cannotRestartOutputStream``.
    public static var cannotRestartOutputStream: Self { Self("cannotRestartOutputStream") }
    /// See ``ResumeError/Reason/validatorChanged(expected:received:)``.
    public static var validatorChanged: Self { Self("validatorChanged") }
    /// See ``ResumeError/Reason/unrequestedPartialContent``.
    public static var unrequestedPartialContent: Self { Self("unrequestedPartialContent") }
    /// See ``ResumeError/Reason/incomplete(held:length:)``.
    public static var incomplete: Self { Self("incomplete") }
    /// See ``ResumeError/Reason/unexpectedStatus(_:)``.
    public static var unexpectedStatus: Self { Self("unexpectedStatus") }
    /// See ``ResumeError/Reason/bodyExceedsContentRange(last:)``.
    public static var bodyExceedsContentRange: Self { Self("bodyExceedsContentRange") }
    /// See ``ResumeError/Reason/unsupportedResumeDataVersion(found:readable:)``.
    public static var unsupportedResumeDataVersion: Self { Self("unsupportedResumeDataVersion") }
}
