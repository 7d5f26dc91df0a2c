import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// A ``URLConnectionOperation`` for HTTP that validates and decodes its response with a
/// response serializer and reports the outcome to a success or a failure block.
///
/// Exactly one of the two blocks runs, exactly once, on ``URLConnectionOperation/completionQueue``
/// and never on the network thread. A cancelled operation calls `failure` with
/// `URLError(.cancelled)` and never `success`. The blocks run before the operation is marked
/// finished, so an operation that depends on this one starts after them and can read
/// ``responseObject``.
///
/// ```swift
/// let operation = HTTPRequestOperation(request: URLRequest(url: url))
/// operation.setCompletionBlockWithSuccess({ operation, object in
///     print(operation.response?.statusCode ?? 0, object ?? "")
/// }, failure: { operation, error in
///     print("failed:", error)
/// })
/// queue.addOperation(operation)
/// ```
///
/// ## Subclassing notes
///
/// Override ``processResponse()`` to change how the outcome is decided; call `super` to keep
/// serialization and the blocks. Replace ``responseSerializer`` to change only the decoding.
open class HTTPRequestOperation: URLConnectionOperation, @unchecked Sendable {
    // @unchecked Sendable: this class's own mutable fields live in the superclass's one
    // state struct (`state.http`), behind its one Mutex.

    /// Called with the operation and its serialized response object.
    public typealias SuccessBlock = @Sendable (_ operation: HTTPRequestOperation, _ responseObject: Any?) -> Void
    /// Called with the operation and the reason it failed.
    public typealias FailureBlock = @Sendable (_ operation: HTTPRequestOperation, _ error: any Error) -> Void

    /// This class's mutable fields, kept in ``URLConnectionOperation``'s state.
    struct HTTPState: Sendable {
        var responseSerializer = ChosenResponseSerializer.data
        /// Whatever the serializer made (JSON objects are `Any`, which is not `Sendable`):
        /// written once, on the completion queue, before the blocks run, and only read after.
        var responseObject = Handover<Any?>(nil)
        var success: SuccessBlock?
        var failure: FailureBlock?
    }

    /// The HTTP response, once its head has arrived.
    open override var response: HTTPURLResponse? { super.response as? HTTPURLResponse }

    /// Validates and decodes the response. Default: an ``HTTPResponseSerializer`` that accepts
    /// status codes 200–299 and returns the body as `Data`.
    public var responseSerializer: any URLResponseSerialization {
        get { state.withLock { $0.http.responseSerializer.serializer } }
        set {
            let chosen = ChosenResponseSerializer(newValue)
            state.withLock { $0.http.responseSerializer = chosen }
        }
    }

    /// Sets a serializer whose kind is already known (the manager's, one of the library's own).
    func setResponseSerializer(_ chosen: ChosenResponseSerializer) {
        state.withLock { $0.http.responseSerializer = chosen }
    }

    /// What ``responseSerializer`` made of the response; nil until the operation finished.
    /// When the response failed validation (a 4xx or 5xx) but its body decodes, this is the
    /// decoded body, so the failure can be read.
    public var responseObject: Any? { state.withLock { $0.http.responseObject }.value }

    /// Sets the blocks that report the outcome; exactly one of them runs, once.
    ///
    /// - Parameters:
    ///   - success: Runs when the transfer succeeded and the serializer accepted the response.
    ///   - failure: Runs with the transport, cancellation, validation or decoding error.
    public func setCompletionBlockWithSuccess(_ success: SuccessBlock?, failure: FailureBlock?) {
        state.withLock {
            $0.http.success = success
            $0.http.failure = failure
        }
    }

    /// Serializes the response, records the outcome and runs the success or failure block.
    open override func processResponse() {
        super.processResponse()
        let chosen = state.withLock { $0.http.responseSerializer }
        var failure = error
        var object: Any?
        if failure == nil {
            do {
                object = try serializedObject(with: chosen)
            } catch {
                failure = error
                state.withLock { $0.error = error }
                // A 4xx or 5xx body often explains itself: keep it decoded when it decodes.
                if error is ResponseValidationError, let validating = chosen.validating {
                    object = try? validating.decode(response: super.response, data: responseData)
                }
            }
        }
        let made = Handover(object)
        let blocks = state.withLock { state -> (SuccessBlock?, FailureBlock?) in
            state.http.responseObject = made
            defer { (state.http.success, state.http.failure) = (nil, nil) }
            return (state.http.success, state.http.failure)
        }
        if let failure {
            blocks.1?(self, failure)
        } else {
            blocks.0?(self, object)
        }
    }

    /// What `serializer` makes of the response. The library's own serializers first try the
    /// response head, which spares building the `HTTPURLResponse` (see
    /// HeadOnlySerialization.swift); whatever they do not accept that way, and every other
    /// serializer, gets the built response.
    private func serializedObject(with chosen: ChosenResponseSerializer) throws -> Any? {
        let data = responseData
        if let judge = chosen.headJudge, let head = unbuiltResponseHead,
           let accepted = judge.objectAcceptedFromHead(head, data: data) {
            return accepted.value
        }
        return try chosen.serializer.responseObject(for: super.response, data: data)
    }
}
