import Foundation

/// An operation that depends on another one that failed or was cancelled, and so did not run.
public struct DependencyError: Error, Sendable, CustomStringConvertible {
    /// The kinds of ``DependencyError``.
    public typealias Code = ErrorCode<DependencyError>

    /// The dependency that failed or was cancelled (the first one found, in declared order).
    public let failedOperation: Operation
    /// Its error: `URLError(.cancelled)` for a cancelled one.
    public let underlying: (any Error)?
    /// The URL of its request, when it has one (a ``URLConnectionOperation`` does).
    public let url: URL?

    /// ``ErrorCode/dependencyCancelled`` when the failure started with a cancellation (see
    /// ``dependencyWasCancelled``), else ``ErrorCode/dependencyFailed``.
    public var code: Code { dependencyWasCancelled ? .dependencyCancelled : .dependencyFailed }

    /// Whether the failure started with a cancellation — of the dependency itself, or of one
    /// further up its chain.
    public var dependencyWasCancelled: Bool {
        if failedOperation.isCancelled || (underlying as? URLError)?.code == .cancelled { return true }
        return (underlying as? DependencyError)?.dependencyWasCancelled ?? false
    }

    /// The operation where the failure started: the first one up the chain that failed on
    /// its own rather than because of a dependency.
    public var rootFailedOperation: Operation {
        (underlying as? DependencyError)?.rootFailedOperation ?? failedOperation
    }

    /// A sentence for logs and people.
    public var description: String {
        let what = url?.absoluteString ?? "\(failedOperation)"
        return "Not run: the operation it depends on (\(what)) \(dependencyWasCancelled ? "was cancelled" : "failed")"
            + (underlying.map { ": \($0)" } ?? ".")
    }
}

extension ErrorCode where Domain == DependencyError {
    /// A dependency failed on its own, or because one further up its chain did.
    public static var dependencyFailed: Self { Self("dependencyFailed") }
    /// A dependency, or one further up its chain, was cancelled.
    public static var dependencyCancelled: Self { Self("dependencyCancelled") }
}
