import Foundation
@testable import HTTPOperations
import HTTPTestServer
import HTTPTestTLSServer
import Testing

extension AllTests {
    /// How requests started together share connections. HTTP/2 over TLS: one connection, many
    /// streams (`requestsStartedTogetherShareOneHTTP2Connection`, against nginx). HTTP/1.1: a
    /// connection each, whether the server said so by ALPN or is plain http — waiting for a
    /// possible HTTP/2 connection (`CURLOPT_PIPEWAIT`) must not queue them behind each other.
    @Suite struct ConnectionSharing {
        static func startTogether(_ urls: [URL], policy: SecurityPolicy? = nil) async throws -> [HTTPRequestOperation] {
            let operations = urls.map { url in
                let op = HTTPRequestOperation(request: URLRequest(url: url))
                if let policy { op.securityPolicy = policy }
                return op
            }
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = operations.count
            let recorder = OutcomeRecorder()
            for op in operations {
                recorder.watch(op)
                queue.addOperation(op)
            }
            try await recorder.settle(operations)
            return operations
        }

        @Test func http1OverTLSGetsAConnectionPerRequest() async throws {
            let server = try TLSTestServer.start(.goodChain)
            defer { server.shutdown() }
            let policy = try SecurityPolicy(trustedCertificateAuthorities: [TLSCertificate(derEncoded: TestCertificates.shared.root.certificateDER)])
            let operations = try await Self.startTogether((0..<6).map { _ in server.http.url(.delay(milliseconds: 500)) }, policy: policy)
            #expect(operations.allSatisfy { $0.error == nil })
            // Queued behind one another they would have shared one connection.
            #expect(server.http.acceptedConnections == 6)
        }

        @Test func plainHTTPGetsAConnectionPerRequest() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let operations = try await Self.startTogether((0..<6).map { _ in server.url(.delay(milliseconds: 500)) })
            #expect(operations.allSatisfy { $0.error == nil })
            #expect(server.acceptedConnections == 6)
        }
    }
}
