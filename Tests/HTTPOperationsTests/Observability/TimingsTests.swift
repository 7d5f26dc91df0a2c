import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Synchronization
import Testing

/// Where an operation's time went, from libcurl's timers, over real connections.
extension AllTests {
    @Suite struct TimingsTests {
        static func phasesAreOrdered(_ transfer: TransferTimings.Transfer) -> Bool {
            transfer.nameLookup <= transfer.connect && transfer.connect <= transfer.requestSent
                && transfer.tlsHandshake <= transfer.requestSent && transfer.requestSent <= transfer.firstByte
                && transfer.firstByte <= transfer.total && transfer.total > .zero
        }

        @Test func aGetReportsItsPhasesAndThenReusesItsConnection() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let queue = OperationQueue()
            let first = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(1000))))
            #expect(try await run(first, on: queue).error == nil)
            let timings = try #require(first.timings)
            #expect(Self.phasesAreOrdered(timings.lastTransfer), "\(timings)")
            #expect(timings.lastTransfer.tlsHandshake == .zero)
            #expect(timings.lastTransfer.httpVersion == "1.1")
            #expect(!timings.lastTransfer.reusedConnection)
            #expect(timings.transfers == 1 && timings.redirects == 0 && timings.beforeLastTransfer == .zero)
            #expect(timings.total == timings.lastTransfer.total)

            let second = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(1000))))
            #expect(try await run(second, on: queue).error == nil)
            #expect(second.timings?.lastTransfer.reusedConnection == true, "\(String(describing: second.timings))")
            #expect(server.acceptedConnections == 1)
        }

        @Test func redirectsAddTransfers() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.redirect(times: 2))))
            #expect(try await run(op).error == nil)
            let timings = try #require(op.timings)
            #expect(timings.transfers == 3 && timings.redirects == 2, "\(timings)")
            #expect(timings.beforeLastTransfer > .zero && timings.total > timings.lastTransfer.total)
        }

        @Test func aTLSConnectionReportsItsHandshake() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let op = HTTPRequestOperation(request: URLRequest(url: server.http.url(.bytes(10))))
            op.securityPolicy = try SecurityPolicy(
                trustedCertificateAuthorities: [TLSCertificate(derEncoded: TestCertificates.shared.root.certificateDER)])
            #expect(try await run(op).error == nil)
            let timings = try #require(op.timings)
            #expect(Self.phasesAreOrdered(timings.lastTransfer), "\(timings)")
            #expect(timings.lastTransfer.tlsHandshake > timings.lastTransfer.connect, "\(timings)")
        }

        @Test func theFinishNotificationCarriesThem() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(10))))
            let seen = Mutex<[TransferTimings]>([])
            let posted = TestSignal("the finish notification")
            let observer = NotificationCenter.default.addObserver(forName: .networkingOperationDidFinish, object: op, queue: nil) {
                if let timings = $0.userInfo?[Notification.transferTimingsKey] as? TransferTimings {
                    seen.withLock { $0.append(timings) }
                }
                posted.fire()
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            #expect(try await run(op).error == nil)
            // The notification comes after the blocks.
            try await posted.wait()
            #expect(seen.withLock { $0 } == [try #require(op.timings)])
        }

        @Test func noTransferNoTimings() async throws {
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
            op.cancel()
            _ = try await run(op)
            #expect(op.timings == nil)
        }
    }
}
