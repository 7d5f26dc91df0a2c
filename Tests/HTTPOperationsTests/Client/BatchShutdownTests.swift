import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

/// A batch's completion and a manager's shutdown: the completion is how its caller learns that
/// the batch is over, so a shutdown never swallows it. (The manager cancelled it as an
/// operation not yet started, and cancelled a refused one: a caller waiting on it waited for
/// ever.)
extension AllTests.ShutdownTests {
    @Test func aBatchRunningAtAShutdownStillCompletes() async throws {
        let manager = HTTPRequestOperationManager()
        manager.responseSerializer = HTTPResponseSerializer()
        let slow = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.delay(milliseconds: 300))), success: nil, failure: nil)
        let ran = Mutex(0)
        let (started, observer) = notificationSignal(.networkingOperationDidStart, of: slow)
        defer { NotificationCenter.default.removeObserver(observer) }
        manager.enqueueBatch(of: [slow], completion: { operations in
            #expect(operations.count == 1)
            ran.withLock { $0 += 1 }
        })
        try await started.wait()
        let report = await manager.shutdown(gracePeriod: .seconds(5))
        #expect(slow.error == nil, "\(String(describing: slow.error))")
        // Waited for, as a running request: it has run, once, when the shutdown returns.
        #expect(ran.withLock { $0 } == 1)
        #expect(report.completed == 2 && report.cancelled == 0, "\(report)")
    }

    @Test func aBatchGivenToAManagerThatShutDownCompletesWithItsRefusedOperations() async throws {
        let manager = HTTPRequestOperationManager()
        _ = await manager.shutdown(gracePeriod: .seconds(1))
        let operation = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(10))), success: nil, failure: nil)
        let done = TestSignal("the refused batch's completion")
        manager.enqueueBatch(of: [operation], completion: { operations in
            #expect((operations.first?.error as? TransferError)?.code == .managerShutDown)
            done.fire()
        })
        try await done.wait(timeout: .seconds(5))
    }
}
