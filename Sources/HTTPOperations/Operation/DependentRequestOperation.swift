import Foundation

/// An ``HTTPRequestOperation`` whose request is built when it starts, from the operations it
/// depends on: log in, then fetch with the token from the login response.
///
/// ```swift
/// let login = manager.post("login", parameters: credentials, success: nil, failure: nil)!
/// let profile = manager.chain(after: [login]) { dependencies in
///     let token = (dependencies[0] as? HTTPRequestOperation)?.responseObject as? [String: Any]
///     var request = URLRequest(url: manager.baseURL!.appendingPathComponent("me"))
///     request.setValue("Bearer \(token?["token"] ?? "")", forHTTPHeaderField: "Authorization")
///     return request
/// }
/// ```
///
/// If a dependency failed or was cancelled, this operation fails with ``DependencyError``
/// naming it, without sending anything — unless ``runsWhenDependenciesFail`` is true. So
/// cancelling the head of a chain makes every later link fail with a `DependencyError`
/// whose `dependencyWasCancelled` is true.
open class DependentRequestOperation: HTTPRequestOperation, @unchecked Sendable {
    // @unchecked Sendable: `build` and `runsWhenDependenciesFail` are set at init and only
    // read after; the superclasses keep their state behind their locks.

    /// Builds the request from the dependencies, in the order they were added.
    public typealias RequestBuilder = @Sendable (_ dependencies: [Operation]) throws -> URLRequest

    private let build: RequestBuilder

    /// Run even when a dependency failed or was cancelled.
    public let runsWhenDependenciesFail: Bool

    /// Creates an operation that depends on `dependencies` and builds its request from them.
    ///
    /// - Parameters:
    ///   - dependencies: Added with `addDependency`.
    ///   - runsWhenDependenciesFail: Run anyway when one failed. Default false.
    ///   - build: Called when the operation starts; an error it throws fails the operation.
    public init(dependencies: [Operation], runsWhenDependenciesFail: Bool = false, build: @escaping RequestBuilder) {
        self.build = build
        self.runsWhenDependenciesFail = runsWhenDependenciesFail
        // A placeholder until start(); `currentRequest` holds the one sent.
        super.init(request: URLRequest(url: URL(string: "about:dependent-request")!))
        dependencies.forEach(addDependency)
    }

    /// Fails with ``DependencyError`` when a dependency failed, else builds the request.
    open override func prepareRequest() throws -> URLRequest? {
        if !runsWhenDependenciesFail, let failed = dependencies.first(where: Self.failed) {
            let connection = failed as? URLConnectionOperation
            throw DependencyError(failedOperation: failed, underlying: connection?.error, url: connection?.request.url)
        }
        return try build(dependencies)
    }

    private static func failed(_ operation: Operation) -> Bool {
        if operation.isCancelled { return true }
        if let connection = operation as? URLConnectionOperation { return connection.error != nil }
        return false
    }
}

extension HTTPRequestOperationManager {
    /// Makes and enqueues an operation that runs after `dependencies` and builds its request
    /// from them; configured like the verb methods' operations.
    ///
    /// - Parameters:
    ///   - dependencies: The operations it waits for.
    ///   - runsWhenDependenciesFail: Run anyway when one failed. Default false.
    ///   - success: As for the verb methods.
    ///   - failure: As for the verb methods; gets a ``DependencyError`` when a dependency failed.
    ///   - build: Builds the request from the dependencies.
    @discardableResult
    public func chain(after dependencies: [Operation], runsWhenDependenciesFail: Bool = false,
                      success: Success? = nil, failure: Failure? = nil,
                      request build: @escaping DependentRequestOperation.RequestBuilder) -> DependentRequestOperation {
        let operation = DependentRequestOperation(dependencies: dependencies, runsWhenDependenciesFail: runsWhenDependenciesFail,
                                                  build: build)
        configure(operation, success: success, failure: failure)
        enqueue(operation)
        return operation
    }
}
