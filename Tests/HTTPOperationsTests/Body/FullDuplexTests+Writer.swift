import Crypto
import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTypes
import Synchronization
import Testing

extension AllTests.FullDuplex {
    /// A write past the declared length fails the request even when curl had already taken
    /// every declared byte (found by review: it only threw in the writer).
    @Test func aWritePastTheLengthAfterTheBodyWasTakenFailsTheRequest() async throws {
        let body = HTTPRequestBody.restartable(knownLength: 10) { writer in
            try await writer.write(Data(repeating: 0x41, count: 10))
            try await Task.sleep(for: .milliseconds(100))
            try await writer.write(Data([0x42]))
            return nil
        }
        let error = await #expect(throws: URLError.self) {
            _ = try await HTTPRequestOperationManager().perform(HTTPRequest(method: .post, url: testServer.url(.delay(milliseconds: 500))), body: body)
        }
        #expect(error?.code == .requestBodyStreamExhausted, "\(String(describing: error))")
    }

    /// The writer's cancellation handlers never run on the network thread (found by review:
    /// its task was cancelled there, and `Task.cancel()` runs them in the calling thread).
    @Test func theWritersCancellationHandlerRunsOffTheNetworkThread() async throws {
        let ranOnNetworkThread = Mutex<Bool?>(nil)
        let handled = TestSignal("the writer's cancellation handler")
        let body = HTTPRequestBody.restartable { writer in
            try await writer.write(Data("x".utf8))
            try await withTaskCancellationHandler {
                try await Task.sleep(for: .seconds(60))
            } onCancel: {
                ranOnNetworkThread.withLock { $0 = NetworkThread.shared.isCurrentThread }
                handled.fire()
            }
            return nil
        }
        let manager = HTTPRequestOperationManager()
        let operation = try manager.httpRequestOperation(for: HTTPRequest(method: .post, url: Self.deafServer.baseURL), body: body)
        manager.enqueue(operation)
        try await Task.sleep(for: .milliseconds(200))
        operation.cancel()
        try await handled.wait(timeout: .seconds(10))
        #expect(ranOnNetworkThread.withLock { $0 } == false)
    }
}
