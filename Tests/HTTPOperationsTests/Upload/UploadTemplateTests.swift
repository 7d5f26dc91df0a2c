import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests.ResumableUploads {
    /// The creation request is a template: its fields go with every request, but the framing
    /// of each request is the upload's own. tus's own example creation carries
    /// `Content-Length: 0`; with it in the template, the creation that carries the first chunk
    /// was refused (a `SecurityError` for a `Content-Length` that contradicts the body) and
    /// the upload failed.
    @Test(arguments: ResumableUploadProtocol.allCases)
    func aTemplatesFramingFieldsAreNotTheUploadsOwn(uploadProtocol: ResumableUploadProtocol) async throws {
        let run = try UploadRun(size: 40_000, protocol: uploadProtocol)
        var template = URLRequest(url: run.creationURL, timeoutInterval: 10)
        template.setValue("0", forHTTPHeaderField: "Content-Length")
        template.setValue("chunked", forHTTPHeaderField: "Transfer-Encoding")
        template.setValue("elsewhere.example", forHTTPHeaderField: "Host")
        template.setValue("kept", forHTTPHeaderField: "X-Kept")
        let operation = run.watch(ResumableUploadOperation(request: template, source: .file(run.file),
                                                           configuration: run.configuration()))
        operation.start()
        try await waitUntilFinished(operation)
        #expect(operation.error == nil, "\(String(describing: operation.error))")
        #expect(operation.isCompleted)
        #expect(run.uploads.first?.bytes == run.content)
    }
}
