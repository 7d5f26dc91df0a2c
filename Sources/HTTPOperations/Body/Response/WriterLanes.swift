import Foundation
import Synchronization

/// A fixed set of serial queues that downloads to files write through: each download gets a
/// serial writer queue of its own that targets one lane, taken in turn, so its writes stay in
/// order.
///
/// A serial queue with no target runs on libdispatch's *overcommit* pool, which starts a
/// thread whenever it has work and no idle thread, and ends one only after it has sat idle
/// for 5 s. With a queue per download, a process kept about as many threads as the most
/// downloads that ever wrote at once: the soak held 10 such threads, and its resident memory
/// rose about 0.5 MiB with each (stack, allocator caches; Docs/Reliability.md). Lanes that
/// were themselves overcommit queues still left 7.
///
/// So the lanes target the *utility* global queue. libdispatch gives each quality of service
/// a thread pool of its own, as wide as the machine has cores, so file writes use at most
/// that many threads, however many downloads run. They never take a thread from the default
/// pool that runs callbacks: a write that blocks (a throttled disk) holds up its lane and
/// the utility pool, not the completion queue, and a completion check that waits for a
/// writer with `sync` waits on a pool no callback occupies. A caller's `OutputStream` is not
/// put on a lane: its writer keeps a queue of its own, so a stream that blocks holds up only
/// its own download.
final class WriterLanes: Sendable {
    /// The process-wide lanes: one per core, and at least four, so that one blocked write
    /// holds up at most a quarter of the downloads.
    static let shared = WriterLanes(count: max(4, ProcessInfo.processInfo.activeProcessorCount))

    private let lanes: [DispatchQueue]
    private let turn = Atomic<UInt>(0)

    /// How many lanes: at most this many downloads write at once.
    var count: Int { lanes.count }

    /// - Parameter count: How many lanes; at least 1.
    init(count: Int) {
        precondition(count > 0, "writer lanes need at least one lane")
        // Utility, not default: writes never hold a thread that callbacks need.
        lanes = (0..<count).map { DispatchQueue(label: "HTTPOperations.writers.\($0)", target: .global(qos: .utility)) }
    }

    /// A serial queue for one download's writes, on the next lane.
    func makeWriterQueue() -> DispatchQueue {
        let index = Int(turn.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(lanes.count))
        return DispatchQueue(label: "HTTPOperations.writer", target: lanes[index])
    }
}
