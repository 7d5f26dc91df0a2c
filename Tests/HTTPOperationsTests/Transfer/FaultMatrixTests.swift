import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    /// Every fault of ``Fault`` meets every body destination, over HTTP/1.1 (the fault server
    /// itself) and HTTP/2 (nginx over TLS in front of it; under a sanitizer, see
    /// ``http2Destinations(for:)``). Each cell checks: the outcome it
    /// should have (a typed error, or the right bytes), reported exactly once, within the set
    /// timeouts, and that whatever reached a file or a stream is a prefix of the real body —
    /// never spliced. Docs/Reliability.md has the table.
    @Suite(.timeLimit(.minutes(1)))
    struct FaultMatrix {
        /// Where the body goes.
        enum Destination: String, CaseIterable, Sendable { case memory, file, stream }
        /// How the bytes travel.
        enum Wire: String, CaseIterable, Sendable { case http1 = "HTTP/1.1", http2 = "HTTP/2 via nginx" }

        /// What a cell must end with.
        enum Expected: Equatable, CustomStringConvertible {
            /// Success, with the first `count` bytes of the pattern as the body.
            case bytes(Int)
            case urlError(URLError.Code)
            case bodyTooLarge
            /// A ``ResponseValidationError`` for this status (a gateway's answer).
            case status(Int)

            /// Whether the body is the gateway's error page rather than the server's bytes.
            var isGatewayAnswer: Bool {
                if case .status = self { return true }
                return false
            }

            var description: String {
                switch self {
                case .bytes(let count): "\(count) bytes"
                case .urlError(let code): "URLError \(code.rawValue)"
                case .bodyTooLarge: "TransferError.bodyTooLarge"
                case .status(let code): "status \(code)"
                }
            }
        }

        /// The idle timeout (`URLRequest.timeoutInterval`) and the total one of every cell.
        /// Longer under a sanitizer, which runs the server and the client several times slower.
        #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
        static let idleTimeout: TimeInterval = 4
        static let totalTimeout: Duration = .seconds(8)
        #else
        static let idleTimeout: TimeInterval = 1
        static let totalTimeout: Duration = .seconds(3)
        #endif

        static var wires: [Wire] {
            ExternalServers.nginxPath != nil || ExternalServers.required ? Wire.allCases : [.http1]
        }

        /// The destinations a fault is played into over HTTP/2: all three, except under a
        /// sanitizer for a fault that ends in an error everywhere: there one, a different one
        /// for each such fault in turn (so all three still meet HTTP/2 there). These cells run
        /// one after the other, and the slowest wait for a timeout, which a sanitizer makes 8 s
        /// long. A fault with bytes to deliver somewhere (a body whose length lies, one over
        /// the memory limit) meets every destination: the only cells where a file or a stream
        /// over HTTP/2 finishes well.
        static func http2Destinations(for fault: Fault) -> [Destination] {
            #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
            let delivers = Destination.allCases.contains { destination in
                if case .bytes = expected(fault, destination, .http2) { return true }
                return false
            }
            guard !delivers else { return Destination.allCases }
            let index = Fault.allCases.firstIndex(of: fault)!
            return [Destination.allCases[index % Destination.allCases.count]]
            #else
            return Destination.allCases
            #endif
        }

        /// The HTTP/1.1 cells of a fault run side by side, each on its own connection. The
        /// HTTP/2 cells run one after the other: side by side they would share one connection,
        /// and libcurl 7.88 then reports a reset stream as complete now and then (see
        /// ``resetStreamsMultiplexedOnOneConnection()``).
        @Test(arguments: Fault.allCases)
        func everyDestinationAndWire(_ fault: Fault) async throws {
            await withTaskGroup(of: Void.self) { group in
                for destination in Destination.allCases {
                    group.addTask { await Self.play(fault, into: destination, over: .http1) }
                }
                if Self.wires.contains(.http2) {
                    group.addTask {
                        for destination in Self.http2Destinations(for: fault) { await Self.play(fault, into: destination, over: .http2) }
                    }
                }
            }
        }

        /// nginx resets every stream whose upstream body breaks off (RST_STREAM, INTERNAL_ERROR:
        /// 90 of 90 in a packet capture decrypted with SSLKEYLOGFILE), and the curl tool, which
        /// drives libcurl with `curl_multi_perform`, reports all of them as failed (540 of 540,
        /// six at a time on one connection). Through this library, which drives libcurl 7.88.1
        /// (Debian 12) with `curl_multi_socket_action`, six streams in flight on one connection
        /// gave 1 to 8 in 90 reported as complete, with the 32,768 bytes that came before the
        /// reset. The library passes curl's result on unchanged
        /// (`CurlTransfer.complete(with:message:)`), such a body has no length to check, and the
        /// bytes are a true prefix: nothing is spliced, but the body is short. A known issue on
        /// libcurl 7.x only: 8.14.1 fails every such stream (none of 90 in each of 8 runs), and
        /// there the expectation must hold.
        @Test(.enabled(if: ExternalServers.nginxPath != nil || ExternalServers.required, "nginx is not installed"))
        func resetStreamsMultiplexedOnOneConnection() async throws {
            let policy = try SecurityPolicy(trustedCertificateAuthorities: TLSCertificate.certificates(
                contentsOf: URL(fileURLWithPath: ExternalServers.nginx.certificateAuthorityFile)))
            let url = URL(string: ExternalServers.nginx.tlsBaseURL + "/fault/" + Fault.chunkShorterThanDeclared.rawValue)!
            var reportedComplete = 0, total = 0
            for _ in 0..<15 {
                let operations = (0..<6).map { _ in
                    let operation = HTTPRequestOperation(request: URLRequest(url: url, timeoutInterval: Self.idleTimeout))
                    operation.securityPolicy = policy
                    operation.retryPolicy = .none
                    operation.configuration.totalTimeout = Self.totalTimeout
                    return operation
                }
                let recorder = OutcomeRecorder()
                for operation in operations {
                    recorder.watch(operation)
                    OperationQueue().addOperation(operation)
                }
                try await recorder.settle(operations, timeout: Self.totalTimeout + .seconds(10))
                for operation in operations {
                    total += 1
                    #expect(recorder.deliveries(of: operation) == 1)
                    guard let outcome = recorder.outcome(of: operation) else { continue }
                    if outcome.error == nil {
                        reportedComplete += 1
                        // Short, but never anything but the body's first bytes.
                        let data = outcome.data ?? Data()
                        #expect(data.count < Fault.bodySize && data == TestServer.pattern(count: data.count))
                    } else {
                        #expect(outcome.urlErrorCode == URLError.Code.networkConnectionLost, "\(Self.describe(outcome.error))")
                    }
                }
            }
            withKnownIssue("libcurl \(Libcurl.version) reports a reset HTTP/2 stream as complete", isIntermittent: true) {
                #expect(reportedComplete == 0, "\(reportedComplete) of \(total) reset streams reported as complete")
            } when: {
                LibcurlBehaviour.mayReportResetStreamsAsComplete
            }
        }

        /// The outcome each cell must have. HTTP/2 goes through nginx, which answers 502 for a
        /// server that closes before its head or sends a head too large, resets the stream when
        /// the server breaks off or breaks its framing mid-body, and passes a reply that is no
        /// HTTP on as HTTP/0.9 (`:status 009`, which the client refuses).
        static func expected(_ fault: Fault, _ destination: Destination, _ wire: Wire) -> Expected {
            switch (fault, wire) {
            case (.finBeforeHead, .http1), (.garbageInsteadOfHTTP, _), (.malformedStatusLine, _):
                return .urlError(.badServerResponse)
            case (.rstBeforeHead, .http1): return .urlError(.networkConnectionLost)
            case (.finBeforeHead, .http2), (.rstBeforeHead, .http2), (.megabyteOfHeaders, .http2): return .status(502)
            case (.finMidBody, _), (.rstMidBody, _), (.finBeforeLastByte, _), (.rstBeforeLastByte, _),
                 (.chunkShorterThanDeclared, _), (.chunksWithoutLastChunk, _):
                return .urlError(.networkConnectionLost)
            case (.chunkSizeNotHex, .http1), (.chunkWithoutCRLF, .http1), (.chunkSizeOverflow, .http1), (.megabyteOfHeaders, .http1):
                return .urlError(.badServerResponse)
            case (.chunkSizeNotHex, .http2), (.chunkWithoutCRLF, .http2), (.chunkSizeOverflow, .http2):
                return .urlError(.networkConnectionLost)
            case (.badGzip, _), (.badBrotli, _), (.badZstd, _): return .urlError(.cannotDecodeContentData)
            case (.redirectLoop, _): return .urlError(.httpTooManyRedirects)
            case (.headersDrippedOneBytePerSecond, _), (.bodyThatNeverEnds, _), (.acceptsAndNeverAnswers, _),
                 (.contentLengthLongerThanBody, _):
                return .urlError(.timedOut)
            case (.largerThanMaximumBodySize, _): return destination == .memory ? .bodyTooLarge : .bytes(Fault.largeBodySize)
            case (.contentLengthShorterThanBody, _): return .bytes(Fault.shortContentLength)
            case (.informationalStorm, .http1): return .bytes(Fault.bodySize)
            // nginx 1.22 relays no 1xx from an upstream; curl refuses the stream it sends instead.
            case (.informationalStorm, .http2): return .urlError(.networkConnectionLost)
            }
        }

        /// Runs one cell and records every way it can be wrong.
        static func play(_ fault: Fault, into destination: Destination, over wire: Wire) async {
            let cell = "\(fault.rawValue) → \(destination.rawValue) over \(wire.rawValue)"
            let expected = expected(fault, destination, wire)
            let base = wire == .http1 ? faultServer.baseURL.absoluteString : ExternalServers.nginx.tlsBaseURL
            let operation = HTTPRequestOperation(request: URLRequest(url: URL(string: base + "/fault/" + fault.rawValue)!,
                                                                     timeoutInterval: idleTimeout))
            operation.configuration.totalTimeout = totalTimeout
            // One transfer per cell: a retry would make the outcome a race between the retry
            // policy's waits and the total timeout (RetryPolicyTests cover retries).
            operation.retryPolicy = .none
            operation.maximumBodySize = Fault.maximumBodySize
            if wire == .http2 {
                guard let policy = try? SecurityPolicy(trustedCertificateAuthorities: TLSCertificate.certificates(
                    contentsOf: URL(fileURLWithPath: ExternalServers.nginx.certificateAuthorityFile))) else {
                    Issue.record("\(cell): nginx's certificate authority did not load")
                    return
                }
                operation.securityPolicy = policy
            }
            let file = temporaryFile()
            defer { removeDownload(file) }
            var reader: Task<(Data, (any Error)?), Never>?
            switch destination {
            case .memory: break
            case .file: operation.destinationURL = file
            case .stream:
                let stream = ResponseBodyStream(operation)
                reader = Task {
                    var received = Data()
                    do {
                        for try await chunk in stream { received.append(chunk) }
                        return (received, nil)
                    } catch {
                        return (received, error)
                    }
                }
            }
            let recorder = OutcomeRecorder()
            recorder.watch(operation)
            OperationQueue().addOperation(operation)
            do {
                // The set timeouts (1 s idle, 3 s in all; 4 s and 8 s under a sanitizer), then 10 s more, is a hang.
                try await recorder.settle([operation], timeout: totalTimeout + .seconds(10))
            } catch {
                operation.cancel()
                Issue.record("\(cell): no outcome within \(totalTimeout + .seconds(10)), expected \(expected)")
                return
            }
            #expect(recorder.deliveries(of: operation) == 1, "\(cell): reported \(recorder.deliveries(of: operation)) times")
            guard let outcome = recorder.outcome(of: operation) else { return }
            let streamed = await reader?.value

            // The bytes that reached the destination, whatever the outcome: never anything but a
            // prefix of the body the server meant to send.
            let arrived: Data? = switch destination {
            case .memory: outcome.data
            case .file: FileManager.default.fileExists(atPath: file.path) ? (try? Data(contentsOf: file)) : nil
            case .stream: streamed?.0
            }
            if let arrived, !expected.isGatewayAnswer {
                #expect(arrived == TestServer.pattern(count: arrived.count), "\(cell): \(arrived.count) bytes that are not the body's prefix")
            }

            switch expected {
            case .bytes(let count):
                #expect(outcome.error == nil, "\(cell): expected \(count) bytes, got \(String(describing: outcome.error))")
                #expect(arrived?.count == count, "\(cell): expected \(count) bytes, got \(arrived?.count ?? -1)")
                if destination == .stream { #expect(streamed?.1 == nil, "\(cell): the stream threw \(String(describing: streamed?.1))") }
            case .urlError(let code):
                #expect(outcome.urlErrorCode == code, "\(cell): expected \(expected), got \(Self.describe(outcome.error))")
            case .bodyTooLarge:
                #expect((outcome.error as? TransferError)?.code == .bodyTooLarge, "\(cell): expected \(expected), got \(Self.describe(outcome.error))")
            case .status(let status):
                #expect((outcome.error as? ResponseValidationError)?.statusCode == status,
                        "\(cell): expected \(expected), got \(Self.describe(outcome.error))")
            }
            if case .bytes = expected {} else if destination == .stream {
                #expect(streamed?.1 != nil, "\(cell): the stream ended without the error")
            }
        }

        static func describe(_ error: (any Error)?) -> String {
            guard let error else { return "success" }
            if let urlError = error as? URLError {
                return "URLError \(urlError.code.rawValue) (\(urlError.curlError.map(String.init(describing:)) ?? urlError.localizedDescription))"
            }
            return String(describing: error)
        }
    }
}
