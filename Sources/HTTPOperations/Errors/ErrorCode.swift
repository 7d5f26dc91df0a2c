/// What kind of failure an error of `Domain` reports, compared with its static members:
/// `error.code == .rangeStartMismatch`.
///
/// Every error type of this library has a `code` of this shape. A new kind of failure is a
/// new static member, so adding one breaks no caller — a public `enum` would break every
/// exhaustive `switch` over it. (AsyncHTTPClient's `HTTPClientError` is built the same way.)
/// The values a failure names (offsets, lengths, a status code) are in the error's `reason`
/// and description.
public struct ErrorCode<Domain>: Hashable, Sendable, CustomStringConvertible {
    /// The code's name, as in its static member.
    public let name: String

    init(_ name: String) {
        self.name = name
    }

    /// The name.
    public var description: String { name }
}
