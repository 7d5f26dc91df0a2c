import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import HTTPOperations
import HTTPTestServer
import Testing

/// Timeouts too long to count (issue 24): `timeoutInterval = .infinity`, a huge value, or a
/// huge `totalTimeout` trapped on the network thread (`Int(infinity * 1000)`), taking the
/// whole process down. The operations run in child processes (exit tests), so a trap fails
/// the test instead of ending the run.
extension AllTests {
    @Suite struct UnboundedTimeoutTests {
        /// Idle timeouts no clock can count, and NaN.
        static let unbounded: [TimeInterval] = [.infinity, .greatestFiniteMagnitude, 1e300, 9.3e15, .nan]

        @Test func anUnboundedIdleTimeoutIsGivenToCurlAsOneItKeeps() throws {
            for interval in Self.unbounded {
                let request = URLRequest(url: URL(string: "http://127.0.0.1:9/")!, timeoutInterval: interval)
                let timeout = try TransferRequest(request, credential: nil).timeout
                // Whole milliseconds in a C int: what libcurl 7.88 keeps for a connect timeout.
                #expect(timeout.isFinite && timeout > 0 && timeout * 1000 <= Double(Int32.max), "\(interval) → \(timeout)")
            }
        }

        @Test func requestsWithAnUnboundedIdleTimeoutComplete() async {
            await #expect(processExitsWith: .success) {
                for interval in UnboundedTimeoutTests.unbounded {
                    let request = URLRequest(url: testServer.url(.bytes(10)), timeoutInterval: interval)
                    let outcome = try? await run(HTTPRequestOperation(request: request))
                    guard case .success = outcome else {
                        FileHandle.standardError.write(Data("timeout \(interval): \(String(describing: outcome))\n".utf8))
                        exit(1)
                    }
                }
                exit(0)
            }
        }

        /// A total timeout too long to ever pass is no limit. Before, `TransferDriver.armDeadline`
        /// multiplied its seconds by 10⁹ in `Int` on the network thread, and the process died
        /// with SIGILL.
        @Test func anOperationWithAHugeTotalTimeoutCompletes() async {
            await #expect(processExitsWith: .success) {
                for limit: Duration in [.seconds(Int64.max), .seconds(Int64.max / 2), .seconds(10_000_000_000)] {
                    let operation = HTTPRequestOperation(request: URLRequest(url: testServer.url(.bytes(10))))
                    operation.configuration.totalTimeout = limit
                    let outcome = try? await run(operation)
                    guard case .success = outcome else {
                        FileHandle.standardError.write(Data("total timeout \(limit): \(String(describing: outcome))\n".utf8))
                        exit(1)
                    }
                }
                exit(0)
            }
        }
    }
}

extension AllTests.CommandLineTests {
    /// `httpop get --timeout inf URL` was killed by SIGILL (exit 132 in a shell).
    @Test func getWithAnInfiniteTimeoutSucceeds() async throws {
        let url = testServer.url(.bytes(10)).absoluteString
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-cli-\(UUID()).out")
        #expect(FileManager.default.createFile(atPath: output.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        let get = try Run(["get", "--timeout", "inf", url], standardOutput: handle)
        let result = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: get.finish()) }
        }
        #expect(get.process.terminationReason == .exit && result.status == 0,
                "reason \(get.process.terminationReason.rawValue), status \(result.status): \(result.stderr)")
        #expect(try Data(contentsOf: output).count == 10)
    }
}

extension AllTests.UnboundedTimeoutTests {
    /// The delay of a total timeout's deadline (``Swift/Duration/dispatchDelay``).
    @Test func aDurationBecomesADelayOrNoneWhenItCanNeverPass() {
        #expect(Duration.seconds(1).dispatchDelay == .nanoseconds(1_000_000_000))
        #expect(Duration.milliseconds(1_500).dispatchDelay == .nanoseconds(1_500_000_000))
        #expect(Duration.nanoseconds(1).dispatchDelay == .nanoseconds(1))
        #expect(Duration.zero.dispatchDelay == .nanoseconds(0))
        #expect(Duration.seconds(-5).dispatchDelay == .nanoseconds(0))
        #expect(Duration.seconds(Int64.min).dispatchDelay == .nanoseconds(0))
        // The longest delay a DispatchTime can count, and the first one past it.
        #expect(Duration.nanoseconds(Int64.max).dispatchDelay == .nanoseconds(Int.max))
        #expect((Duration.nanoseconds(Int64.max) + .nanoseconds(1)).dispatchDelay == nil)
        #expect(Duration.seconds(Int64.max).dispatchDelay == nil)
        #expect(Duration.seconds(10_000_000_000).dispatchDelay == nil)
        // Below a nanosecond: truncated, as before.
        #expect(Duration(secondsComponent: 2, attosecondsComponent: 999_999_999).dispatchDelay == .nanoseconds(2_000_000_000))
    }
}
