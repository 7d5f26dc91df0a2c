import Foundation

/// Why a resumable upload stopped with an error of its own (a refused answer the protocol does
/// not name is a ``ResponseValidationError``; a transport failure that retries could not cure,
/// a `URLError` inside ``Reason/retriesExhausted(attempts:)``). Whatever the reason, the
/// upload was not reported complete, and the server was never sent a byte that is not the
/// source's byte at that offset.
public struct UploadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of ``UploadError``.
    public typealias Code = ErrorCode<UploadError>

    /// What went wrong, with its values. Compare with the static members, or compare ``code``
    /// to ignore the values.
    public struct Reason: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case fileChanged(path: String)
            case offsetAhead(reported: Int64, sent: Int64)
            case offsetBehind(reported: Int64, acknowledged: Int64)
            case offsetBeyondLength(reported: Int64, length: Int64)
            case uploadGone(status: Int)
            case unsupportedServer(String)
            case tooLarge(length: Int64, limit: Int64?)
            case sourceCannotRewind(offset: Int64)
            case sourceLengthMismatch(declared: Int64)
            case invalidAnswer(String)
            case retriesExhausted(attempts: Int)
        }

        let kind: Kind

        /// The file at `path` is not the one the upload began with (its size, modification time
        /// or content digest differ): nothing more of it is sent.
        public static func fileChanged(path: String) -> Reason { Reason(kind: .fileChanged(path: path)) }
        /// The server reported an offset past every byte this upload could have sent it: it
        /// claims bytes it cannot have.
        public static func offsetAhead(reported: Int64, sent: Int64) -> Reason {
            Reason(kind: .offsetAhead(reported: reported, sent: sent))
        }
        /// The server reported an offset below one it had acknowledged: it lost bytes it said it
        /// kept.
        public static func offsetBehind(reported: Int64, acknowledged: Int64) -> Reason {
            Reason(kind: .offsetBehind(reported: reported, acknowledged: acknowledged))
        }
        /// The server reported an offset past the upload's length.
        public static func offsetBeyondLength(reported: Int64, length: Int64) -> Reason {
            Reason(kind: .offsetBeyondLength(reported: reported, length: length))
        }
        /// The upload no longer exists on the server (`status` 404 or 410: it expired, or was
        /// terminated). A new upload starts over.
        public static func uploadGone(status: Int) -> Reason { Reason(kind: .uploadGone(status: status)) }
        /// The server does not speak the protocol as the upload needs it (a `Tus-Version`
        /// without 1.0.0, no `creation` extension, a 412).
        public static func unsupportedServer(_ detail: String) -> Reason { Reason(kind: .unsupportedServer(detail)) }
        /// The upload is larger than the server accepts (`Tus-Max-Size`, or a 413).
        public static func tooLarge(length: Int64, limit: Int64?) -> Reason { Reason(kind: .tooLarge(length: length, limit: limit)) }
        /// A stream source was asked for bytes from `offset`, which it no longer holds (a stream
        /// is read once; only the bytes not yet acknowledged are kept).
        public static func sourceCannotRewind(offset: Int64) -> Reason { Reason(kind: .sourceCannotRewind(offset: offset)) }
        /// A stream source ended before, or went on past, the `declared` length the upload was
        /// created with.
        public static func sourceLengthMismatch(declared: Int64) -> Reason { Reason(kind: .sourceLengthMismatch(declared: declared)) }
        /// The server's answer lacked what the protocol requires (a `Location`, an
        /// `Upload-Offset`), or carried it malformed.
        public static func invalidAnswer(_ detail: String) -> Reason { Reason(kind: .invalidAnswer(detail)) }
        /// `attempts` requests in a row failed without the server acknowledging a byte more
        /// (``UploadConfiguration/maximumConsecutiveFailures``); the last one's error is
        /// ``UploadError/underlyingError``.
        public static func retriesExhausted(attempts: Int) -> Reason { Reason(kind: .retriesExhausted(attempts: attempts)) }

        /// The kind, without the values.
        public var code: Code {
            switch kind {
            case .fileChanged: .fileChanged
            case .offsetAhead: .offsetAhead
            case .offsetBehind: .offsetBehind
            case .offsetBeyondLength: .offsetBeyondLength
            case .uploadGone: .uploadGone
            case .unsupportedServer: .unsupportedServer
            case .tooLarge: .tooLarge
            case .sourceCannotRewind: .sourceCannotRewind
            case .sourceLengthMismatch: .sourceLengthMismatch
            case .invalidAnswer: .invalidAnswer
            case .retriesExhausted: .retriesExhausted
            }
        }
    }

    /// What went wrong.
    public let reason: Reason
    /// The upload's URL (or, before it was created, the creation URL), when known.
    public let url: URL?
    /// The error of the last request, for ``Reason/retriesExhausted(attempts:)``.
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
    public static func == (lhs: UploadError, rhs: UploadError) -> Bool {
        lhs.reason == rhs.reason && lhs.url == rhs.url
    }

    /// A sentence naming what went wrong.
    public var description: String {
        let at = url.map { " (\($0.absoluteString))" } ?? ""
        switch reason.kind {
        case .fileChanged(let path):
            return "The file \(path) changed since the upload began\(at); nothing more of it was sent."
        case .offsetAhead(let reported, let sent):
            return "The server reported offset \(reported), past the \(sent) bytes it could have received\(at)."
        case .offsetBehind(let reported, let acknowledged):
            return "The server reported offset \(reported) after acknowledging \(acknowledged) bytes\(at): it lost data."
        case .offsetBeyondLength(let reported, let length):
            return "The server reported offset \(reported), past the upload's \(length) bytes\(at)."
        case .uploadGone(let status):
            return "The upload is gone from the server (status \(status): expired or terminated)\(at)."
        case .unsupportedServer(let detail):
            return "The server does not support this upload\(at): \(detail)"
        case .tooLarge(let length, let limit):
            return "The upload's \(length) bytes are more than the server accepts\(limit.map { " (\($0))" } ?? "")\(at)."
        case .sourceCannotRewind(let offset):
            return "The upload's stream no longer holds the bytes from offset \(offset)\(at)."
        case .sourceLengthMismatch(let declared):
            return "The upload's stream did not hold exactly its declared \(declared) bytes\(at)."
        case .invalidAnswer(let detail):
            return "The server's answer broke the upload protocol\(at): \(detail)"
        case .retriesExhausted(let attempts):
            let last = underlyingError.map { " The last: \($0)" } ?? ""
            return "The upload failed \(attempts) requests in a row without progress\(at).\(last)"
        }
    }
}

extension ErrorCode where Domain == UploadError {
    /// See ``UploadError/Reason/fileChanged(path:)``.
    public static var fileChanged: Self { Self("fileChanged") }
    /// See ``UploadError/Reason/offsetAhead(reported:sent:)``.
    public static var offsetAhead: Self { Self("offsetAhead") }
    /// See ``UploadError/Reason/offsetBehind(reported:acknowledged:)``.
    public static var offsetBehind: Self { Self("offsetBehind") }
    /// See ``UploadError/Reason/offsetBeyondLength(reported:length:)``.
    public static var offsetBeyondLength: Self { Self("offsetBeyondLength") }
    /// See ``UploadError/Reason/uploadGone(status:)``.
    public static var uploadGone: Self { Self("uploadGone") }
    /// See ``UploadError/Reason/unsupportedServer(_:)``.
    public static var unsupportedServer: Self { Self("unsupportedServer") }
    /// See ``UploadError/Reason/tooLarge(length:limit:)``.
    public static var tooLarge: Self { Self("tooLarge") }
    /// See ``UploadError/Reason/sourceCannotRewind(offset:)``.
    public static var sourceCannotRewind: Self { Self("sourceCannotRewind") }
    /// See ``UploadError/Reason/sourceLengthMismatch(declared:)``.
    public static var sourceLengthMismatch: Self { Self("sourceLengthMismatch") }
    /// See ``UploadError/Reason/invalidAnswer(_:)``.
    public static var invalidAnswer: Self { Self("invalidAnswer") }
    /// See ``UploadError/Reason/retriesExhausted(attempts:)``.
    public static var retriesExhausted: Self { Self("retriesExhausted") }
}

extension UploadError: HTTPOperationsError {}
