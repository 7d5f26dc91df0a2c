import Dispatch

/// Hands work decided on the network thread to callback queues, one dispatch per batch rather
/// than one per piece of work.
///
/// Every `DispatchQueue.async` from the network thread to an idle global queue wakes a worker
/// thread (`sem_post`, a futex wake): once per finished operation, on the thread that limits
/// throughput (Docs/Performance.md, "Fixed so far"). Outcomes decided
/// in one pass over curl's finished transfers (or one drain of the inbox) are collected and
/// handed over together: a single one goes straight to its queue, as it would without this
/// type; two or more go in one block on a global queue, which dispatches each to its own
/// queue. That block runs no callback itself, so a slow or blocking callback never holds up
/// another operation's, and each piece of work still runs on the queue it was meant for.
///
/// A dispatch group is entered when the work is handed in, not when it reaches its queue, so
/// a `notify` or `wait` on the group cannot slip through the gap.
///
/// The network thread lets go of the work before its block can run: the work travels in a
/// ``Parcel`` whose only strong reference is handed to the block, so whatever the work
/// captures (an operation, and with it a subclass's `deinit`, which is user code) is
/// released on the callback queue. Holding a copy until `async` returned would make the
/// network thread drop the last reference whenever waking the worker preempted it, and run
/// the operation's `deinit` there.
///
/// Confined to the network thread.
final class CallbackHandoff {
    /// One piece of work and its group, owned by the block that runs it.
    private final class Parcel: Sendable {
        let work: @Sendable () -> Void
        let group: DispatchGroup?

        init(work: @escaping @Sendable () -> Void, group: DispatchGroup?) {
            self.work = work
            self.group = group
        }
    }

    private struct Delivery: Sendable {
        let queue: DispatchQueue
        /// An unmanaged strong reference that exactly one block takes.
        let parcel: Unmanaged<Parcel>

        /// Hands the parcel's reference to the block; nothing else holds one.
        func dispatch() {
            let parcel = self.parcel
            queue.async {
                let taken = parcel.takeRetainedValue()
                let group = taken.group
                taken.work()
                // Let go before leaving: whoever waits on the group then finds everything the
                // work captured (an operation, its body) released, as `async(group:)` does.
                _ = consume taken
                group?.leave()
            }
        }
    }

    private var batch: [Delivery] = []
    private var collecting = false

    /// Runs `body`, holding back the work it hands in until it returns, then dispatches it.
    /// `body` should let go of what the work captures before it returns.
    func collect(_ body: () -> Void) {
        guard !collecting else { return body() }
        collecting = true
        body()
        collecting = false
        flush()
    }

    /// Runs `work` on `queue` (inside `group`): at the end of the enclosing ``collect(_:)``, or
    /// now when there is none. The caller should pass its last reference to `work`.
    func deliver(on queue: DispatchQueue, group: DispatchGroup?, _ work: consuming @escaping @Sendable () -> Void) {
        group?.enter()
        let delivery = Delivery(queue: queue, parcel: .passRetained(Parcel(work: work, group: group)))
        if collecting {
            batch.append(delivery)
        } else {
            delivery.dispatch()
        }
    }

    private func flush() {
        switch batch.count {
        case 0:
            return
        case 1:
            batch[0].dispatch()
            batch.removeAll(keepingCapacity: true)
        default:
            // Moved out, not copied: emptying a shared array would copy it first.
            var deliveries: [Delivery] = []
            swap(&deliveries, &batch)
            DispatchQueue.global().async { [deliveries] in
                for delivery in deliveries { delivery.dispatch() }
            }
        }
    }
}
