import Foundation
@testable import HTTPOperations
import Synchronization
import Testing

/// A delegate that refuses a head or a body chunk ends its transfer with curl's
/// `CURLE_WRITE_ERROR`, whose own message says only how many bytes were refused. The reason the
/// delegate gives (``CurlTransfer/refusal``) is named in that error, so that a refusal no
/// recorded failure explains names its guard.
extension AllTests {
    @Suite struct RefusalNamingTests {
        /// Refuses the head or the first body chunk with a reason, and hands over the error.
        final class RefusingDelegate: CurlTransferDelegate, @unchecked Sendable {
            // Safe: every call comes on the network thread; the test reads `ended` only.
            let refusesHead: Bool
            let ended: @Sendable (CurlError?) -> Void

            init(refusesHead: Bool, ended: @escaping @Sendable (CurlError?) -> Void) {
                self.refusesHead = refusesHead
                self.ended = ended
            }

            func transfer(_ transfer: CurlTransfer, didReceive head: ResponseHead) -> Bool {
                guard refusesHead else { return true }
                transfer.refusal = "the test's head refusal"
                return false
            }

            func transfer(_ transfer: CurlTransfer, didReceiveInformational head: ResponseHead) {}
            func transfer(_ transfer: CurlTransfer, didReceiveTrailers trailers: ResponseHead) {}

            func transfer(_ transfer: CurlTransfer, didReceiveBody bytes: UnsafeRawBufferPointer) -> BodyDisposition {
                transfer.refusal = "the test's body refusal"
                return .abort
            }

            func transfer(_ transfer: CurlTransfer, didSendBodyBytes count: Int) {}
            func transfer(_ transfer: CurlTransfer, didCompleteWith error: CurlError?) { ended(error) }
        }

        /// Runs one GET of 1,000 bytes on the network thread with a delegate that refuses.
        static func refusedTransferError(refusesHead: Bool) async throws -> CurlError? {
            let outcome = Mutex<CurlError??>(nil)
            let done = TestSignal("the refused transfer to complete")
            let delegate = RefusingDelegate(refusesHead: refusesHead) { error in
                outcome.withLock { $0 = .some(error) }
                done.fire()
            }
            let url = testServer.url(.bytes(1_000))
            // Made on the network thread: a transfer is confined to it, and its request cannot
            // be copied into the job.
            #expect(NetworkThread.shared.perform {
                let request = try! TransferRequest(URLRequest(url: url), credential: nil)
                NetworkThread.shared.multi.add(CurlTransfer(request: request, delegate: delegate))
            })
            try await done.wait(timeout: .seconds(30))
            return try #require(outcome.withLock { $0 })
        }

        @Test(arguments: [true, false])
        func aRefusalIsNamedInCurlsWriteError(refusesHead: Bool) async throws {
            let error = try #require(try await Self.refusedTransferError(refusesHead: refusesHead))
            #expect(error.code == 23, "\(error)")
            let reason = refusesHead ? "the test's head refusal" : "the test's body refusal"
            #expect(error.message.contains("(refused: \(reason))"), "\(error)")
            // curl's own words stay first.
            #expect(error.message.hasPrefix("Failure writing output to destination") || error.message.hasPrefix("Failed writing"),
                    "\(error)")
        }
    }
}
