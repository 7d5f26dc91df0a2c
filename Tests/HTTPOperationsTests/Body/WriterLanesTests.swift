import Foundation
@testable import HTTPOperations
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension AllTests {
    /// Downloads to files write through a fixed number of lanes: many downloads must not
    /// make libdispatch start a thread each (the soak's resident memory grew with them).
    @Suite struct WriterLaneLimits {
        /// What ran, and how much of it at once.
        struct Record {
            var running = 0
            var mostAtOnce = 0
            /// Per writer queue, the jobs in the order they ran.
            var order: [[Int]]
        }

        @Test func manyWritersRunNoMoreAtOnceThanLanes() {
            // Given 16 downloads' writer queues on two lanes, each with writes that block a while
            let lanes = WriterLanes(count: 2)
            let writers = 16, jobs = 3
            let record = Mutex(Record(order: Array(repeating: [], count: writers)))
            let group = DispatchGroup()
            for writer in 0..<writers {
                let queue = lanes.makeWriterQueue()
                for job in 0..<jobs {
                    queue.async(group: group) {
                        record.withLock {
                            $0.running += 1
                            $0.mostAtOnce = max($0.mostAtOnce, $0.running)
                            $0.order[writer].append(job)
                        }
                        usleep(5_000)  // a write(2) the disk makes wait
                        record.withLock { $0.running -= 1 }
                    }
                }
            }
            // Then every write ran, never more than two at once, each writer's in order
            #expect(group.wait(timeout: .now() + 30) == .success)
            let result = record.withLock { $0 }
            #expect(result.mostAtOnce == 2, "both lanes used, and no more")
            #expect(result.order == Array(repeating: Array(0..<jobs), count: writers))
        }

        @Test func theSharedLanesAreAtLeastFour() {
            #expect(WriterLanes.shared.count >= 4)
            #expect(WriterLanes.shared.count >= ProcessInfo.processInfo.activeProcessorCount)
        }
    }
}
