import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

/// An output stream that keeps what it is given, can hold every write until the test opens
/// its gate, and can refuse writes after a number of bytes.
final class GatedOutputStream: OutputStream {
    private let received = Mutex(Data())
    private let gate = DispatchSemaphore(value: 0)
    private let failAfter: Int?
    /// Fires when a write first finds the gate shut.
    let blocked = TestSignal("a write held at the gate")

    /// - Parameters:
    ///   - gated: Hold writes until ``open(gate:)``.
    ///   - failAfter: Refuse every write once this many bytes were taken.
    init(gated: Bool, failAfter: Int? = nil) {
        self.failAfter = failAfter
        super.init(toMemory: ())
        if !gated { gate.signal() }
    }

    required convenience init(toMemory: ()) {
        self.init(gated: false)
    }

    /// Lets the held write and every later one through.
    func openGate() { gate.signal() }

    var bytes: Data { received.withLock { $0 } }

    override func open() {}
    override func close() {}
    override var hasSpaceAvailable: Bool { true }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
        if blocked.count == 0 { blocked.fire() }
        gate.wait()
        gate.signal()
        return received.withLock { data in
            if let failAfter, data.count >= failAfter { return -1 }
            data.append(buffer, count: length)
            return length
        }
    }
}

/// CPU time the network thread has used so far, in seconds: read on that thread.
func networkThreadCPUSeconds() async throws -> Double {
    let reading = Mutex<Double>(-1)
    let read = TestSignal("a reading on the network thread")
    NetworkThread.shared.perform {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        reading.withLock { $0 = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 }
        read.fire()
    }
    try await read.wait(timeout: .seconds(5))
    return reading.withLock { $0 }
}


extension AllTests {
    /// Bodies bound for a file or a stream are written off the network thread, in bounded
    /// memory (Docs/Architecture.md, "Writing bodies").
    @Suite struct BodyWriting {
        @Test func aBlockedStreamHoldsUpNoOtherTransferAndTakesBoundedMemory() async throws {
            let size = 8 << 20
            let stream = GatedOutputStream(gated: true)
            let download = operation(.bytes(size))
            download.outputStream = stream
            let taken = Mutex<Int64>(0)
            download.setDownloadProgressBlock { _, total, _ in taken.withLock { $0 = total } }
            let recorder = OutcomeRecorder()
            recorder.watch(download)
            OperationQueue().addOperation(download)
            try await stream.blocked.wait()

            // The network thread is free: another transfer runs to its end meanwhile.
            let other = try await run(operation(.bytes(1000)), timeout: .seconds(10))
            #expect(other.error == nil)
            // Waiting must not spin: a paused transfer whose socket stayed watched would keep
            // the network thread busy, ~100% of a core. What is measured is the network
            // thread's own CPU time (read on that thread) against the wall-clock window, so
            // nothing else in the process counts and a spin cannot hide.
            let (cpuBefore, wallBefore) = (try await networkThreadCPUSeconds(), ContinuousClock.now)
            try await Task.sleep(for: .milliseconds(500))
            let (cpuAfter, wallAfter) = (try await networkThreadCPUSeconds(), ContinuousClock.now)
            let window = (wallAfter - wallBefore) / .seconds(1)
            let share = (cpuAfter - cpuBefore) / window
            #expect(share < 0.1, "the network thread was busy \(Int(share * 100))% of \(window) s while the writer was stuck")
            let held = taken.withLock { $0 }
            #expect(held < Int64(size))
            let bound = Int64((BodyWriter.buffersAhead + 1) * BodyWriter.bufferSize)
            #expect(held <= bound, "took \(held) bytes while the writer was stuck")
            #expect(recorder.outcome(of: download) == nil)

            stream.openGate()
            try await recorder.done.wait()
            #expect(recorder.outcome(of: download)?.error == nil)
            #expect(stream.bytes == TestServer.pattern(count: size))
        }

        @Test func waitingForTheWriterIsNotAStall() async throws {
            // The request's idle timeout is 1 s; the writer is held for 2.5 s. curl must not
            // count the wait as a transfer that stopped.
            let size = 4 << 20
            let stream = GatedOutputStream(gated: true)
            let download = operation(.bytes(size), timeout: 1)
            download.outputStream = stream
            let recorder = OutcomeRecorder()
            recorder.watch(download)
            OperationQueue().addOperation(download)
            try await stream.blocked.wait()
            try await Task.sleep(for: .milliseconds(2500))
            stream.openGate()
            try await recorder.done.wait()
            #expect(recorder.outcome(of: download)?.error == nil)
            #expect(stream.bytes == TestServer.pattern(count: size))
        }

        @Test func aWriteThatFailsFailsTheDownloadAndNothingFollowsTheGap() async throws {
            let stream = GatedOutputStream(gated: false, failAfter: 300 << 10)
            let download = operation(.bytes(16 << 20))
            download.outputStream = stream
            let outcome = try await run(download)
            #expect(outcome.urlErrorCode == .cannotWriteToFile)
            let written = stream.bytes
            #expect(written.count >= 300 << 10)
            #expect(written == TestServer.pattern(count: written.count))
        }

        @Test func aStreamThatCannotOpenFailsTheDownloadWithItsReason() async throws {
            let download = operation(.bytes(100_000))
            download.outputStream = OutputStream(toFileAtPath: "/nonexistent-\(UUID())/body.bin", append: false)
            let outcome = try await run(download)
            #expect(outcome.urlErrorCode == .cannotWriteToFile)
            let description = (outcome.error as? URLError)?.localizedDescription ?? ""
            #expect(description.contains("No such file"), "\(description)")
        }

        @Test func cancellingWhileTheWriterIsHeldEndsOnceItLetsGo() async throws {
            let stream = GatedOutputStream(gated: true)
            let download = operation(.bytes(8 << 20))
            download.outputStream = stream
            let recorder = OutcomeRecorder()
            recorder.watch(download)
            OperationQueue().addOperation(download)
            try await stream.blocked.wait()
            download.cancel()
            stream.openGate()
            try await recorder.done.wait()
            #expect(recorder.outcome(of: download)?.urlErrorCode == .cancelled)
            // What was taken before the cancel is written whole, in order.
            let written = stream.bytes
            #expect(written == TestServer.pattern(count: written.count))
        }
    }
}
