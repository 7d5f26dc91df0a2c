import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    /// The upload's promise over random scenarios: whatever the server does (drops mid-body or
    /// before its answer, 5xx and 429, stalls, damaged bytes under a checksum, lies about its
    /// offset behind, ahead of what it holds, past what it was sent or past the length, losses,
    /// expiry), with pauses and restarts from saved resume data, the server never holds a byte
    /// that is not the file's byte at that offset; an upload reported complete is the file,
    /// exactly; a failure is typed; and a scenario whose faults are all curable completes.
    @Suite struct UploadCampaign {
        /// Scenarios per run (fewer under the sanitizers, which run the whole suite again).
        #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
        static let scenarios = 40
        #else
        static let scenarios = 250
        #endif

        struct Scenario: CustomStringConvertible {
            var uploadProtocol = ResumableUploadProtocol.tus
            var size = 0
            var chunkSize = 0
            var options = UploadStore.Options()
            var faults: [Int: UploadStore.Fault] = [:]
            /// Restart (cancel, then go on from the last resume data saved) at this progress.
            var restartAt: Int64?
            /// Pause, then resume, at this progress.
            var pauseAt: Int64?

            /// Whether every fault is one a client cures by retrying (so it must complete).
            var curable: Bool {
                faults.values.allSatisfy { fault in
                    switch fault {
                    case .dropAfter, .dropBeforeAnswer, .status, .stall, .corrupt: true
                    case .reportOffset, .claimUnsent, .loseBytes, .expire: false
                    }
                }
            }

            var description: String {
                "\(uploadProtocol) size \(size) chunk \(chunkSize) checksums \(options.checksumAlgorithms) "
                    + "with-upload \(options.creationWithUpload) limit \(options.advertisesUploadLimit) "
                    + "append \(options.maximumAppendSize.map(String.init) ?? "-") restart \(restartAt.map(String.init) ?? "-") "
                    + "pause \(pauseAt.map(String.init) ?? "-") faults \(faults.sorted { $0.key < $1.key })"
            }

            init(random: inout SeededGenerator) {
                uploadProtocol = Bool.random(using: &random) ? .tus : .ietfDraft
                size = [0, 1, Int.random(in: 2...5_000, using: &random), Int.random(in: 5_000...150_000, using: &random)]
                    .randomElement(using: &random)!
                chunkSize = [1_000, 4_096, 16_384, 65_536].randomElement(using: &random)!
                options.checksumAlgorithms = Bool.random(using: &random) ? ["sha256", "sha1"] : []
                options.creationWithUpload = Bool.random(using: &random)
                // The draft: a server known to resume (its OPTIONS names Upload-Limit, perhaps
                // with a smaller append size), or not (the creation carries the whole upload).
                options.advertisesUploadLimit = Int.random(in: 0..<4, using: &random) != 0
                if Bool.random(using: &random) { options.maximumAppendSize = Int64.random(in: 500...20_000, using: &random) }
                let requests = 3 + size / chunkSize
                for _ in 0..<Int.random(in: 0...5, using: &random) {
                    let index = Int.random(in: 0...requests, using: &random)
                    faults[index] = Self.fault(random: &random, size: size, chunkSize: chunkSize,
                                               checksums: !options.checksumAlgorithms.isEmpty && uploadProtocol == .tus)
                }
                if size > 0, Int.random(in: 0..<4, using: &random) == 0 { restartAt = Int64.random(in: 1...Int64(size), using: &random) }
                if size > 0, Int.random(in: 0..<5, using: &random) == 0 { pauseAt = Int64.random(in: 1...Int64(size), using: &random) }
            }

            private static func fault(random: inout SeededGenerator, size: Int, chunkSize: Int, checksums: Bool) -> UploadStore.Fault {
                switch Int.random(in: 0..<20, using: &random) {
                case 0..<5: .dropAfter(bytes: Int.random(in: 0...chunkSize, using: &random))
                case 5..<8: .dropBeforeAnswer
                case 8..<11: .status([500, 502, 503, 429].randomElement(using: &random)!)
                case 11: .stall(milliseconds: Int.random(in: 5...40, using: &random))
                case 12, 13: checksums ? .corrupt : .dropBeforeAnswer
                case 14: .reportOffset(delta: -Int64.random(in: 1...Int64(max(1, chunkSize * 2)), using: &random))
                case 15: .reportOffset(delta: Int64.random(in: 1...Int64(max(1, chunkSize)), using: &random))
                case 16: .reportOffset(delta: Int64(size) + Int64.random(in: 1...10, using: &random))
                case 17: .claimUnsent(extra: Int64.random(in: 1...1_000, using: &random))
                case 18: .loseBytes(Int.random(in: 1...max(1, chunkSize * 2), using: &random))
                default: .expire
                }
            }
        }

        @Test func neverAWrongByteCompleteOnlyWhenExactAndCurableFaultsComplete() async throws {
            var random = SeededGenerator(for: "upload campaign")
            var completed = 0, failed: [String: Int] = [:], restarts = 0, pauses = 0
            for number in 0..<Self.scenarios {
                let scenario = Scenario(random: &random)
                let what = "scenario \(number) (seed \(random.seed)): \(scenario)"
                let run = try UploadRun(size: scenario.size, seed: UInt64(number) &+ random.seed, protocol: scenario.uploadProtocol,
                                        options: scenario.options, faults: scenario.faults)
                let configuration = run.configuration(chunkSize: scenario.chunkSize) {
                    $0.retryDelay = .milliseconds(1)
                    $0.maximumRetryDelay = .milliseconds(5)
                }
                let marks = Mutex<(restart: Int64?, pause: Int64?)>((scenario.restartAt, scenario.pauseAt))
                let restartNow = TestSignal("scenario \(number)'s restart mark, or its end")
                let operation = run.operation(configuration)
                operation.setProgressHandler { operation, sent, _ in
                    let (restart, pause) = marks.withLock { marks -> (Bool, Bool) in
                        let restart = marks.restart.map { sent >= $0 } ?? false
                        let pause = marks.pause.map { sent >= $0 } ?? false
                        if restart { marks.restart = nil }
                        if pause { marks.pause = nil }
                        return (restart, pause)
                    }
                    if pause {
                        operation.pause()
                        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(2)) { operation.resume() }
                    }
                    if restart { restartNow.fire() }
                }
                operation.start()
                var final = operation
                if scenario.restartAt != nil {
                    // Either the mark comes (restart there) or the operation ends first.
                    operation.completionBlock = { restartNow.fire() }
                    try await restartNow.wait()
                    if !operation.isFinished {
                        restarts += 1
                        operation.cancel()
                        try await waitUntilFinished(operation)
                        if let saved = run.savedResumeData.withLock({ $0.last }) {
                            let data = try UploadResumeData(encoded: saved.encoded())
                            final = ResumableUploadOperation(request: URLRequest(url: run.creationURL, timeoutInterval: 10),
                                                             resumeData: data, configuration: configuration)
                        } else {
                            final = run.operation(configuration)
                        }
                        final.start()
                    }
                }
                if scenario.pauseAt != nil { pauses += 1 }
                // Liveness: every upload ends, one way or the other.
                do {
                    try await waitUntilFinished(final, timeout: .seconds(20))
                } catch {
                    Issue.record("did not finish: \(what); log \(run.log)")
                    final.cancel()
                    return
                }
                // Never a wrong byte: whatever any upload of the scenario holds is the file's prefix.
                for upload in run.uploads where !run.content.starts(with: upload.bytes) {
                    Issue.record("\(what): upload \(upload.id) holds \(upload.bytes.count) bytes that are not the file's; log \(run.log)")
                }
                if final.isCompleted {
                    completed += 1
                    let upload = final.uploadURL.flatMap { testServer.uploads.upload(at: $0) }
                    #expect(upload?.bytes == run.content, "\(what): reported complete; log \(run.log)")
                    if scenario.uploadProtocol == .ietfDraft { #expect(upload?.completeSaid == true, "\(what)") }
                    #expect(final.error == nil, "\(what)")
                } else {
                    let error = final.error
                    let name = (error as? UploadError)?.code.name ?? "\(error.map { type(of: $0) } ?? Never.self)"
                    failed[name, default: 0] += 1
                    // Typed: the upload's own error, or a refusal the protocols give no meaning to (a
                    // 400 to a creation whose bytes the server lost, say).
                    #expect(error is UploadError || error is ResponseValidationError,
                            "\(what): untyped failure \(error.map { "\($0)" } ?? "none"); log \(run.log)")
                    #expect(!scenario.curable, "\(what): curable faults, yet \(error.map { "\($0)" } ?? "none"); log \(run.log)")
                }
            }
            print("upload campaign: \(Self.scenarios) scenarios, \(completed) completed, failed \(failed.sorted { $0.key < $1.key }), "
                  + "\(restarts) restarts, \(pauses) pauses")
        }
    }
}
