import Foundation

/// A request the library refused to send, or a server it refused to trust, to protect the
/// caller: a pin that does not match, a ``SecurityPolicy`` that makes no sense, a header that
/// would split the request, a scheme that is not allowed.
///
/// Every check that raises one runs before any byte of the request is sent. Compare ``code``
/// with the static members of ``ErrorCode`` (`error.code == .pinMismatch`); ``reason`` keeps
/// the values (the host, the pins expected and received).
public struct SecurityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of ``SecurityError``.
    public typealias Code = ErrorCode<SecurityError>

    /// What was refused, with its values. Compare with the static members, or compare
    /// ``code`` to ignore the values.
    public struct Reason: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case invalidPolicy(detail: String)
            case unreadableCertificate(source: String, detail: String)
            case pinMismatch(host: String, mode: SecurityPolicy.PinningMode, expected: [String], received: [String])
            case certificateChainUnavailable(host: String)
            case serverTrustRefused(host: String)
            case invalidHeaderField(name: String)
            case invalidMethod(String)
            case schemeNotAllowed(String)
            case insecureRedirect(from: URL, to: URL)
            case destinationIsSymbolicLink(String)
            case unsupportedLibcurl(found: String, required: String)
            case framingFieldMismatch(name: String, detail: String)
        }

        let kind: Kind

        /// The policy's settings contradict each other or cannot be met (for example a
        /// pinning mode with no pins); said when the policy is made.
        public static func invalidPolicy(detail: String) -> Reason { Reason(kind: .invalidPolicy(detail: detail)) }
        /// A certificate, key or authority file could not be read or parsed.
        public static func unreadableCertificate(source: String, detail: String) -> Reason {
            Reason(kind: .unreadableCertificate(source: source, detail: detail))
        }
        /// The server's certificates match none of the pins. `expected` and `received` are
        /// public-key pins in curl's `sha256//BASE64` form (certificate mode: the SHA-256 of
        /// each whole certificate, as `sha256//BASE64` too).
        public static func pinMismatch(host: String, mode: SecurityPolicy.PinningMode, expected: [String], received: [String]) -> Reason {
            Reason(kind: .pinMismatch(host: host, mode: mode, expected: expected, received: received))
        }
        /// A new connection under a pinning policy showed no certificate chain to check.
        public static func certificateChainUnavailable(host: String) -> Reason {
            Reason(kind: .certificateChainUnavailable(host: host))
        }
        /// The operation's server-trust block refused the server; nothing was sent to it.
        public static func serverTrustRefused(host: String) -> Reason { Reason(kind: .serverTrustRefused(host: host)) }
        /// A header field's name or value holds CR, LF or NUL (or the name is not a token):
        /// sent, it would split the request.
        public static func invalidHeaderField(name: String) -> Reason { Reason(kind: .invalidHeaderField(name: name)) }
        /// The HTTP method is not a token (it holds spaces, CR, LF, NUL or separators).
        public static func invalidMethod(_ method: String) -> Reason { Reason(kind: .invalidMethod(method)) }
        /// The URL's scheme is not among the allowed ones (http and https unless told).
        public static func schemeNotAllowed(_ scheme: String) -> Reason { Reason(kind: .schemeNotAllowed(scheme)) }
        /// A redirect would carry the request body from https to plain http.
        public static func insecureRedirect(from: URL, to: URL) -> Reason { Reason(kind: .insecureRedirect(from: from, to: to)) }
        /// The download's destination is a symbolic link and following links was not asked for
        /// (``URLConnectionOperation/followsSymbolicLinks``).
        public static func destinationIsSymbolicLink(_ path: String) -> Reason { Reason(kind: .destinationIsSymbolicLink(path)) }
        /// A caller's framing field (`Content-Length`, `Transfer-Encoding`, `Host`) disagrees
        /// with the body or the URL the library sends: the server could read another request
        /// from the bytes (request smuggling). Nothing was sent.
        public static func framingFieldMismatch(name: String, detail: String) -> Reason {
            Reason(kind: .framingFieldMismatch(name: name, detail: detail))
        }
        /// The libcurl loaded at run time is older than the one whose connection-reuse fixes
        /// this library relies on.
        public static func unsupportedLibcurl(found: String, required: String) -> Reason {
            Reason(kind: .unsupportedLibcurl(found: found, required: required))
        }

        /// The kind, without the values.
        public var code: Code {
            switch kind {
            case .invalidPolicy: .invalidPolicy
            case .unreadableCertificate: .unreadableCertificate
            case .pinMismatch: .pinMismatch
            case .certificateChainUnavailable: .certificateChainUnavailable
            case .serverTrustRefused: .serverTrustRefused
            case .invalidHeaderField: .invalidHeaderField
            case .invalidMethod: .invalidMethod
            case .schemeNotAllowed: .schemeNotAllowed
            case .insecureRedirect: .insecureRedirect
            case .destinationIsSymbolicLink: .destinationIsSymbolicLink
            case .unsupportedLibcurl: .unsupportedLibcurl
            case .framingFieldMismatch: .framingFieldMismatch
            }
        }
    }

    /// What was refused.
    public let reason: Reason
    /// The URL of the request, when there was one.
    public let url: URL?

    /// The kind of failure: `reason.code`.
    public var code: Code { reason.code }

    /// Creates an error.
    public init(_ reason: Reason, url: URL? = nil) {
        self.reason = reason
        self.url = url
    }

    /// One line naming what was refused and why.
    public var description: String {
        let sentence = switch reason.kind {
        case .invalidPolicy(let detail):
            "Invalid security policy: \(detail)"
        case .unreadableCertificate(let source, let detail):
            "Cannot read the certificate or key \(source): \(detail)"
        case .pinMismatch(let host, let mode, let expected, let received):
            "\(host): no certificate matches the \(mode == .certificate ? "pinned certificates" : "pinned public keys")"
                + " (expected one of \(expected.joined(separator: ", ")); received \(received.joined(separator: ", ")))"
        case .certificateChainUnavailable(let host):
            "\(host): the connection showed no certificate chain to check against the pins"
        case .serverTrustRefused(let host):
            "\(host): the server-trust block refused the server; nothing was sent"
        case .invalidHeaderField(let name):
            "The header field \(Self.quoted(name)) holds CR, LF or NUL or is not a valid name; nothing was sent"
        case .invalidMethod(let method):
            "The HTTP method \(Self.quoted(method)) is not a valid token; nothing was sent"
        case .schemeNotAllowed(let scheme):
            "The scheme '\(scheme)' is not allowed (http and https are, unless the policy allows more)"
        case .insecureRedirect(let from, let to):
            "Refusing to follow a redirect from \(from.absoluteString) to \(to.absoluteString): it would send the body unencrypted"
        case .destinationIsSymbolicLink(let path):
            "The destination \(path) is a symbolic link; set followsSymbolicLinks to write through it"
        case .unsupportedLibcurl(let found, let required):
            "libcurl \(found) is loaded; HTTPOperations needs \(required) or later (connection reuse across TLS settings)"
        case .framingFieldMismatch(let name, let detail):
            "The header field \(Self.quoted(name)) disagrees with the request: \(detail); nothing was sent"
        }
        return url.map { "\(sentence) (\($0.absoluteString))" } ?? sentence
    }

    /// `text` quoted with control characters made visible, so a log line stays one line.
    private static func quoted(_ text: String) -> String {
        "'" + text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
            .joined() + "'"
    }
}

extension ErrorCode where Domain == SecurityError {
    /// See ``SecurityError/Reason/invalidPolicy(detail:)``.
    public static var invalidPolicy: Self { Self("invalidPolicy") }
    /// See ``SecurityError/Reason/unreadableCertificate(source:detail:)``.
    public static var unreadableCertificate: Self { Self("unreadableCertificate") }
    /// See ``SecurityError/Reason/pinMismatch(host:mode:expected:received:)``.
    public static var pinMismatch: Self { Self("pinMismatch") }
    /// See ``SecurityError/Reason/certificateChainUnavailable(host:)``.
    public static var certificateChainUnavailable: Self { Self("certificateChainUnavailable") }
    /// See ``SecurityError/Reason/serverTrustRefused(host:)``.
    public static var serverTrustRefused: Self { Self("serverTrustRefused") }
    /// See ``SecurityError/Reason/invalidHeaderField(name:)``.
    public static var invalidHeaderField: Self { Self("invalidHeaderField") }
    /// See ``SecurityError/Reason/invalidMethod(_:)``.
    public static var invalidMethod: Self { Self("invalidMethod") }
    /// See ``SecurityError/Reason/schemeNotAllowed(_:)``.
    public static var schemeNotAllowed: Self { Self("schemeNotAllowed") }
    /// See ``SecurityError/Reason/insecureRedirect(from:to:)``.
    public static var insecureRedirect: Self { Self("insecureRedirect") }
    /// See ``SecurityError/Reason/destinationIsSymbolicLink(_:)``.
    public static var destinationIsSymbolicLink: Self { Self("destinationIsSymbolicLink") }
    /// See ``SecurityError/Reason/unsupportedLibcurl(found:required:)``.
    public static var unsupportedLibcurl: Self { Self("unsupportedLibcurl") }
    /// See ``SecurityError/Reason/framingFieldMismatch(name:detail:)``.
    public static var framingFieldMismatch: Self { Self("framingFieldMismatch") }
}
