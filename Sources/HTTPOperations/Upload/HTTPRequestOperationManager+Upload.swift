import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The manager's doors to resumable uploads: each request of an upload is made with the
/// manager's settings (its security policy, timeouts, cookies, observability), and the upload
/// holds one place on its queue however many requests it sends.
extension HTTPRequestOperationManager {
    /// An operation that uploads `source` to the creation endpoint of `request`, with this
    /// manager's settings. Not enqueued: add it to ``operationQueue`` (or ``enqueue(_:)``).
    public func uploadOperation(_ request: URLRequest, source: UploadSource,
                                configuration: UploadConfiguration = UploadConfiguration()) -> ResumableUploadOperation {
        prepared(ResumableUploadOperation(request: request, source: source, configuration: configuration))
    }

    /// An operation that goes on with the upload `resumeData` describes (after a restart), with
    /// this manager's settings. `request` gives the header fields every request carries (its
    /// URL is the creation URL, used only in errors). Not enqueued.
    public func uploadOperation(_ request: URLRequest, resumeData: UploadResumeData,
                                configuration: UploadConfiguration = UploadConfiguration()) -> ResumableUploadOperation {
        prepared(ResumableUploadOperation(request: request, resumeData: resumeData, configuration: configuration))
    }

    /// Uploads `source` and returns the upload's URL once the server holds all of it (the
    /// creation endpoint's, when a server that does not resume took it whole in one request).
    /// Cancelling the awaiting task cancels the upload.
    ///
    /// - Throws: The operation's ``ResumableUploadOperation/error``.
    public func upload(_ request: URLRequest, source: UploadSource,
                       configuration: UploadConfiguration = UploadConfiguration()) async throws -> URL {
        try await run(uploadOperation(request, source: source, configuration: configuration))
    }

    /// Enqueues `operation` and returns its upload's URL once it completed (or its creation
    /// endpoint's, as ``upload(_:source:configuration:)`` does). Cancelling the awaiting task
    /// cancels the upload.
    ///
    /// - Throws: The operation's ``ResumableUploadOperation/error``.
    public func run(_ operation: ResumableUploadOperation) async throws -> URL {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                operation.whenFinished { continuation.resume() }
                enqueue(operation)
            }
        } onCancel: {
            operation.cancel()
        }
        if let error = operation.error { throw error }
        guard let url = operation.uploadURL ?? operation.request.url, operation.isCompleted else {
            throw URLError(.cancelled, url: operation.request.url, description: "The upload did not complete.")
        }
        return url
    }

    private func prepared(_ operation: ResumableUploadOperation) -> ResumableUploadOperation {
        operation.makeConnections { [self] request in httpRequestOperation(with: request, success: nil, failure: nil) }
        operation.completionQueue = completionQueue
        return operation
    }
}
