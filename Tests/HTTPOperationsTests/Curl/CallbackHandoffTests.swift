import Dispatch
import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// The network thread hands a pass's callbacks over in one dispatch: each still runs on
    /// its own queue, none waits behind another, and groups count them from the start.
    @Suite struct CallbackHandoffs {
        @Test func workOutsideACollectionIsDispatchedAtOnce() async throws {
            let handoff = CallbackHandoff()
            let ran = TestSignal("the work")
            handoff.deliver(on: .global(), group: nil) { ran.fire() }
            try await ran.wait()
        }

        @Test func aBatchIsHeldUntilTheCollectionEndsThenEachRunsOnItsOwnQueue() async throws {
            let handoff = CallbackHandoff()
            let ran = TestSignal("the batch")
            let queues = (0..<3).map { DispatchQueue(label: "handoff.test.\($0)") }
            let key = DispatchSpecificKey<Int>()
            for (index, queue) in queues.enumerated() { queue.setSpecific(key: key, value: index) }
            let ranOnItsQueue = TestSignal("work on the queue it was given")
            handoff.collect {
                for (index, queue) in queues.enumerated() {
                    handoff.deliver(on: queue, group: nil) {
                        if DispatchQueue.getSpecific(key: key) == index { ranOnItsQueue.fire() }
                        ran.fire()
                    }
                }
                // Nothing is dispatched while the pass goes on.
                Thread.sleep(forTimeInterval: 0.05)
                #expect(ran.count == 0)
            }
            try await ran.wait(times: 3)
            try await ranOnItsQueue.wait(times: 3)
        }

        /// A callback that waits for another operation's outcome must not block it: the batch
        /// block only dispatches, and each piece of work gets its own turn on its queue.
        @Test func aBlockingCallbackDoesNotHoldUpTheRestOfItsBatch() async throws {
            let handoff = CallbackHandoff()
            let second = DispatchSemaphore(value: 0)
            let firstSawSecond = TestSignal("the first callback seeing the second")
            handoff.collect {
                handoff.deliver(on: .global(), group: nil) {
                    if second.wait(timeout: .now() + 10) == .success { firstSawSecond.fire() }
                }
                handoff.deliver(on: .global(), group: nil) { second.signal() }
            }
            try await firstSawSecond.wait()
        }

        @Test func aGroupCountsTheWorkFromTheMomentItIsHandedIn() async throws {
            let handoff = CallbackHandoff()
            let group = DispatchGroup()
            let ran = TestSignal("the grouped work")
            handoff.collect {
                handoff.deliver(on: .global(), group: group) { ran.fire() }
                handoff.deliver(on: .global(), group: group) { ran.fire() }
                #expect(group.wait(timeout: .now()) == .timedOut, "the group must not look empty mid-pass")
            }
            try await ran.wait(times: 2)
            #expect(group.wait(timeout: .now() + 10) == .success, "every piece left the group")
        }
    }
}
