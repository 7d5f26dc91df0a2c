import Foundation
@testable import HTTPOperations
import Testing

/// `OneThreadCheck`, the debug check behind the `@unchecked Sendable` of `BodyWriter` and
/// `BodyReader` (issue 39: "a debug check where it is thread confinement"). A check that
/// fails stops the process, so those cases run in child processes (exit tests). Debug builds
/// only: a release build checks nothing, by design.
extension AllTests {
    @Suite struct OneThreadCheckTests {
        #if DEBUG
        @Test func checksOnTheFirstThreadPass() {
            let check = OneThreadCheck()
            for _ in 0..<1_000 { check.check() }
        }

        @Test func aCheckOnASecondThreadStopsTheProgram() async {
            await #expect(processExitsWith: .failure) {
                let check = OneThreadCheck()
                check.check()
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    check.check()
                    done.signal()
                }
                done.wait()
            }
        }

        /// The check is wired where the promise is made: a writer whose buffer is filled from
        /// two threads stops the program at the second.
        @Test func aBodyWriterFilledFromTwoThreadsStopsTheProgram() async {
            await #expect(processExitsWith: .failure) {
                let writer = BodyWriter(target: .stream(OutputStream.toMemory()),
                                        queue: DispatchQueue(label: "writer"), roomAvailable: {})
                Data(repeating: 1, count: 10).withUnsafeBytes { writer.append($0) }
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    Data(repeating: 2, count: 10).withUnsafeBytes { writer.append($0) }
                    done.signal()
                }
                done.wait()
            }
        }
        #endif
    }
}
