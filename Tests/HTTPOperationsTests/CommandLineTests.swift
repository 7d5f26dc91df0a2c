import Foundation
import HTTPOperations
import HTTPTestServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `httpop` built beside this test bundle (`swift build --build-tests` builds both).
let builtHTTPOp: URL? = {
    let candidate = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("httpop")
    return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
}()

extension AllTests {
    /// `httpop`, the built executable, run as a user would.
    @Suite(.enabled(if: builtHTTPOp != nil || ExternalServers.required, "httpop is not built next to the tests"))
    struct CommandLineTests {

        /// A running `httpop` whose stderr is read line by line.
        final class Run: @unchecked Sendable {
            // @unchecked: the Process and Pipe are touched by the test only, one call at a time.
            let process = Process()
            private let stderr = Pipe()
            private var buffer = Data()

            init(_ arguments: [String]) throws {
                process.executableURL = builtHTTPOp
                process.arguments = arguments
                process.standardError = stderr
                process.standardOutput = FileHandle.nullDevice
                try process.run()
            }

            /// Reads stderr until a line containing `text` (or end of output); returns all read.
            func readUntil(_ text: String) -> String {
                while !String(decoding: buffer, as: UTF8.self).contains(text) {
                    let chunk = stderr.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                }
                return String(decoding: buffer, as: UTF8.self)
            }

            /// Waits for exit, reading the rest of stderr; returns the status and all of stderr.
            func finish() -> (status: Int32, stderr: String) {
                buffer.append(stderr.fileHandleForReading.readDataToEndOfFile())
                process.waitUntilExit()
                return (process.terminationStatus, String(decoding: buffer, as: UTF8.self))
            }
        }

        /// Runs blocking reads off the cooperative pool.
        private func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
            try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
            }
        }

        @Test func interruptSavesResumeDataAndTheSameCommandContinues() async throws {
            let size = 3_000_000
            var options = ResumableOptions()
            options.chunkSize = 32 << 10
            options.chunkDelayMilliseconds = 5
            let url = testServer.url(.resumable(size: size, options: options)).absoluteString
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-cli-\(UUID()).bin")
            let sidecar = ResumeData.sidecarURL(for: file)
            defer {
                try? FileManager.default.removeItem(at: file)
                try? FileManager.default.removeItem(at: sidecar)
            }
            let checksum = sha256(ResumableOptions.content(version: 0, count: size))
            let arguments = ["download", url, "-o", file.path, "--sha256", checksum]

            let first = try Run(arguments)
            // Interrupt once progress is reported: the download is under way.
            _ = try await offPool { first.readUntil("%") }
            kill(first.process.processIdentifier, SIGINT)
            let interrupted = try await offPool { first.finish() }
            #expect(interrupted.status == 130, "\(interrupted.stderr)")
            #expect(interrupted.stderr.contains("paused at byte"))
            let saved = try ResumeData(from: try Data(contentsOf: sidecar))
            #expect(saved.offset > 0 && saved.offset < Int64(size))

            let second = try Run(arguments)
            let resumed = try await offPool { second.finish() }
            #expect(resumed.status == 0, "\(resumed.stderr)")
            #expect(resumed.stderr.contains("resuming \(file.lastPathComponent) from byte"))
            #expect(sha256(try Data(contentsOf: file)) == checksum)
            #expect(!FileManager.default.fileExists(atPath: sidecar.path), "resume data removed once complete")
        }

        @Test func continueWithoutResumeDataUsesTheFileSize() async throws {
            let size = 1_000_000
            let url = testServer.url(.resumable(size: size, options: ResumableOptions())).absoluteString
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-cli-\(UUID()).bin")
            defer { try? FileManager.default.removeItem(at: file) }
            try ResumableOptions.content(version: 0, count: 400_000).write(to: file)
            let run = try Run(["download", url, "-o", file.path, "-C"])
            let result = try await offPool { run.finish() }
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains("continuing \(file.lastPathComponent) from byte 400000"))
            #expect(sha256(try Data(contentsOf: file)) == sha256(ResumableOptions.content(version: 0, count: size)))
        }

        @Test func aWrongChecksumFails() async throws {
            let url = testServer.url(.resumable(size: 10_000, options: ResumableOptions())).absoluteString
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-cli-\(UUID()).bin")
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try Run(["download", url, "-o", file.path, "--sha256", String(repeating: "ab", count: 32)])
            let result = try await offPool { run.finish() }
            #expect(result.status == 1)
            #expect(result.stderr.contains("SHA-256"))
        }
    }
}
