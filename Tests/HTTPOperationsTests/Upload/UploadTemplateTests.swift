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
        template.setValue("0", forHTTPHeaderField: "content-length")
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

extension AllTests.ResumableUploads {
    /// The upload's URL is the server's word. On another origin (here `localhost` for
    /// `127.0.0.1`, the same server), the fields the manager names secret stay behind, as a
    /// redirect's would: only `Authorization`, `Proxy-Authorization` and `Cookie` did.
    @Test func anUploadURLOnAnotherOriginGetsNoSecretField() async throws {
        var options = UploadStore.Options()
        options.locationHost = "localhost:\(testServer.port)"
        let run = try UploadRun(size: 40_000, protocol: .tus, options: options)
        let manager = HTTPRequestOperationManager()
        manager.defaultConfiguration.sensitiveHeaderFields = ["X-Api-Key"]
        var template = URLRequest(url: run.creationURL, timeoutInterval: 10)
        template.setValue("secret", forHTTPHeaderField: "x-api-key")
        template.setValue("Bearer alice", forHTTPHeaderField: "authorization")
        let operation = run.watch(manager.uploadOperation(template, source: .file(run.file), configuration: run.configuration()))
        operation.start()
        try await waitUntilFinished(operation)
        #expect(operation.error == nil, "\(String(describing: operation.error))")
        #expect(run.uploads.first?.bytes == run.content)
        let requests = testServer.receivedRequests.filter { $0.uri.contains("/tus/\(run.collection)") }
        let creation = requests.filter { $0.uri.hasSuffix("/tus/\(run.collection)") }
        let onTheUploadURL = requests.filter { !$0.uri.hasSuffix("/tus/\(run.collection)") }
        #expect(!creation.isEmpty && creation.allSatisfy { $0.header("X-Api-Key") == "secret" && $0.header("Authorization") != nil })
        #expect(!onTheUploadURL.isEmpty)
        #expect(onTheUploadURL.allSatisfy { $0.header("X-Api-Key") == nil && $0.header("Authorization") == nil },
                "the API key followed the upload to another origin: \(onTheUploadURL.map { "\($0.method) \($0.uri) \($0.header("Host") ?? "-")" })")
    }
}

extension AllTests.UploadDecisions {
    /// An https creation whose answer names a plain http upload URL: its bytes would go in
    /// clear. Refused, with nothing sent there (as a redirect to http is).
    @Test func anUploadURLThatLeavesHttpsIsRefused() {
        let dialect = UploadDialect(uploadProtocol: .tus, template: URLRequest(url: URL(string: "https://a.test/files")!),
                                    length: 100, metadata: [:])
        let answer = dialect.answer(for: .create(count: 0), status: 201, requestURL: URL(string: "https://a.test/files")) {
            $0 == "Location" ? "http://a.test/files/1" : nil
        }
        #expect(answer.location == nil && answer.insecureLocation?.absoluteString == "http://a.test/files/1")
        var configuration = UploadConfiguration()
        configuration.uploadProtocol = .tus
        var machine = UploadMachine(length: 100, configuration: configuration)
        _ = machine.start()
        _ = machine.answered(.discover, .status(405), jitter: 0)
        guard case .finish(.failed(let error)) = machine.answered(.create(count: 0), answer, jitter: 0) else {
            Issue.record("an http upload URL was taken")
            return
        }
        #expect(error.code == .invalidAnswer)
        #expect(machine.uploadURL == nil)
        // Same scheme, or up to https: taken.
        let upgraded = dialect.answer(for: .create(count: 0), status: 201, requestURL: URL(string: "http://a.test/files")) {
            $0 == "Location" ? "https://a.test/files/1" : nil
        }
        #expect(upgraded.location != nil && upgraded.insecureLocation == nil)
    }
}
