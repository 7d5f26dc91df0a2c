import Foundation

/// Resume data written by a version of the library whose format this one does not read.
public struct UnsupportedResumeDataVersion: Error, Sendable, CustomStringConvertible {
    /// The kinds of ``UnsupportedResumeDataVersion``: one.
    public typealias Code = ErrorCode<UnsupportedResumeDataVersion>

    /// ``ErrorCode/unsupportedResumeDataVersion``.
    public var code: Code { .unsupportedResumeDataVersion }

    /// The version found.
    public let version: Int
    /// The version this library reads.
    public let readableVersion: Int

    /// A sentence for logs and people.
    public var description: String {
        "Resume data version \(version) is not supported (this library reads version \(readableVersion))."
    }
}

extension ErrorCode where Domain == UnsupportedResumeDataVersion {
    /// The resume data names a format version this library does not read.
    public static var unsupportedResumeDataVersion: Self { Self("unsupportedResumeDataVersion") }
}
