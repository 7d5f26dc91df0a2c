import Foundation
@testable import HTTPOperations
import Testing

/// `OneThreadCheck`, the debug check of every access to a `ThreadConfined` value, where
/// `BodyWriter` and `BodyReader` keep their network-thread fields (issue 39: "a debug check
/// where it is thread confinement"). A check that
/// fails stops the process, so those cases run in child processes (exit tests), and each
/// reads the child's standard error: the check's own message, not any crash, passes. Debug
/// builds only: a release build checks nothing, by design.
extension AllTests {
    @Suite struct OneThreadCheckTests {
        #if DEBUG
        /// What a failed check prints.
        static let message = "ran on a second thread"

        @Test func checksOnTheFirstThreadPass() {
            let check = OneThreadCheck()
            for _ in 0..<1_000 { check.check() }
        }

        @Test func aCheckOnASecondThreadStopsTheProgram() async throws {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let box = CheckBox()
                box.check.check()
                OneThreadCheckTests.onASecondThread { box.check.check() }
            }
            #expect(String(decoding: try #require(result).standardErrorContent, as: UTF8.self).contains(Self.message))
        }

        @Test func aConfinedValueTouchedOnASecondThreadStopsTheProgram() async throws {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let confined = ThreadConfined(0)
                confined.withValue { $0 += 1 }
                OneThreadCheckTests.onASecondThread { confined.withValue { $0 += 1 } }
            }
            #expect(String(decoding: try #require(result).standardErrorContent, as: UTF8.self).contains(Self.message))
        }

        /// In a child process: a check that failed here would stop the whole run.
        @Test func theFirstAccessNotTheCreationPicksTheThread() async {
            await #expect(processExitsWith: .success) {
                let confined = ThreadConfined(0)
                OneThreadCheckTests.onASecondThread {
                    confined.withValue { $0 += 1 }
                    confined.withValue { $0 += 1 }
                }
            }
        }

        /// A writer is made on the thread that starts its operation and used on the network
        /// thread: every entry, there, passes.
        @Test func aWriterMadeOnOneThreadIsUsedOnAnother() async {
            await #expect(processExitsWith: .success) {
                let writer = BodyWriter(target: .stream(OutputStream.toMemory()), queue: DispatchQueue(label: "writer"),
                                        roomAvailable: {})
                OneThreadCheckTests.onASecondThread {
                    for entry in WriterEntry.allCases where entry != .close { entry.call(on: writer) }
                    Data(repeating: 1, count: 10).withUnsafeBytes { writer.append($0) }
                    let closed = DispatchSemaphore(value: 0)
                    writer.close { _ in closed.signal() }
                    closed.wait()
                }
            }
        }

        /// Every entry of the writer that touches its network-thread fields checks: the buffer
        /// is filled on one thread, then the entry is called on another.
        @Test(arguments: WriterEntry.allCases)
        func everyWriterEntryChecksItsThread(_ entry: WriterEntry) async throws {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [entry] in
                let writer = BodyWriter(target: .stream(OutputStream.toMemory()), queue: DispatchQueue(label: "writer"),
                                        roomAvailable: {})
                Data(repeating: 1, count: 10).withUnsafeBytes { writer.append($0) }
                OneThreadCheckTests.onASecondThread { entry.call(on: writer) }
            }
            #expect(String(decoding: try #require(result).standardErrorContent, as: UTF8.self).contains(Self.message))
        }

        /// Every entry of the reader that touches the chunk being copied checks.
        @Test(arguments: ReaderEntry.allCases)
        func everyReaderEntryChecksItsThread(_ entry: ReaderEntry) async throws {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [entry] in
                let reader = BodyReader(stream: InputStream(data: Data(repeating: 1, count: 10)),
                                        queue: DispatchQueue(label: "reader"), rewindFirst: false, dataAvailable: {})
                _ = reader.rewind()
                OneThreadCheckTests.onASecondThread { entry.call(on: reader) }
            }
            #expect(String(decoding: try #require(result).standardErrorContent, as: UTF8.self).contains(Self.message))
        }

        enum WriterEntry: String, CaseIterable, Codable, Sendable {
            case admit, append, handOverIfIdle, handOver, discardAndEmpty, afterWrites, close

            func call(on writer: BodyWriter) {
                switch self {
                case .admit: _ = writer.admit(1)
                case .append: Data([2]).withUnsafeBytes { writer.append($0) }
                case .handOverIfIdle: writer.handOverIfIdle()
                case .handOver: writer.handOver()
                case .discardAndEmpty: writer.discardAndEmpty()
                case .afterWrites: writer.afterWrites { _ in }
                case .close: writer.close { _ in }
                }
            }
        }

        enum ReaderEntry: String, CaseIterable, Codable, Sendable {
            case read, rewind

            func call(on reader: BodyReader) {
                switch self {
                case .read:
                    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
                    defer { buffer.deallocate() }
                    _ = reader.read(into: buffer)
                case .rewind: _ = reader.rewind()
                }
            }
        }

        /// A check to call from two threads; a class, since the check is not copyable.
        final class CheckBox: Sendable {
            let check = OneThreadCheck()
        }

        /// Runs `body` on a new thread and waits for it.
        static func onASecondThread(_ body: @escaping @Sendable () -> Void) {
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                body()
                done.signal()
            }
            done.wait()
        }
        #endif
    }
}
