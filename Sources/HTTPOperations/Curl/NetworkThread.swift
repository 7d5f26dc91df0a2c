import CoreFoundation
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The one long-lived thread that owns libcurl.
///
/// It runs a CoreFoundation run loop that never runs dry: besides the inbox source below,
/// ``CurlMulti`` adds an epoll-backed version-1 source and a timer to it. Every curl call in
/// the process happens here, so curl needs no locks and no helper threads.
///
/// Other threads hand work to it with ``perform(_:)``. Jobs are queued in the inbox and run
/// in order, in batches, on the next turn of the run loop.
///
/// It can be stopped (``stop()``) once nothing is under way; it is not started again, and every
/// later job is refused.
///
/// Thread-safety: the only state touched from other threads is the inbox, which lives behind
/// its own `Mutex`, and the count of live connections, an atomic. The run loop, the multi
/// handle and the callback batch are the network thread's own: handed over once at start-up,
/// and read through accessors that check, in debug builds, that they run on it.
final class NetworkThread: Sendable {
    /// The process-wide network thread, started on first use.
    static let shared = NetworkThread()

    /// The thread's name, as seen in debuggers, `top -H`, perf and `Thread.current.name`.
    /// Linux keeps 15 bytes of a thread's name; a longer one is refused, and the thread keeps
    /// the name it inherited from whichever thread started it.
    static let threadName = "httpop-network"

    private let inbox: Inbox
    /// The run loop, its inbox source and the multi handle: made on the network thread and
    /// used there only (the inbox keeps its own copy of what other threads may signal).
    private let own: Handover<StartupHandshake.Context>

    /// The curl multi handle. Network thread only (checked in debug builds).
    var multi: CurlMulti {
        assert(isCurrentThread, "the multi handle is the network thread's")
        return own.value.multi
    }
    /// Batches the callbacks decided in one pass of the network thread. Network thread only
    /// (checked in debug builds).
    var callbacks: CallbackHandoff {
        assert(isCurrentThread, "the callback batch is the network thread's")
        return own.value.callbacks
    }
    /// The thread itself.
    private let thread: pthread_t
    /// Tells the thread's loop to end, and signals when it has.
    let loop: RunLoopControl
    /// Connections made and not yet reported (see ``connectionStarted()``): the thread stops
    /// only when there are none.
    private let liveConnections = Atomic<Int>(0)

    /// Whether the caller runs on the network thread: exact, unlike a name.
    var isCurrentThread: Bool { pthread_equal(pthread_self(), thread) != 0 }

    /// Starts a network thread. The process uses ``shared``; tests make their own.
    init() {
        let inbox = Inbox()
        let started = StartupHandshake()
        let loop = RunLoopControl()
        let thread = Thread {
            // Named from inside, through /proc (Glibc's pthread_setname_np is not visible to
            // Swift): corelibs does not pass a name set before start() on to the kernel, so
            // the thread would carry its creator's name ("...root.default-qos").
            try? Self.threadName.write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .ascii)
            let runLoop = CFRunLoopGetCurrent()!
            let callbacks = CallbackHandoff()
            let source = inbox.makeSource()
            CFRunLoopAddSource(runLoop, source, kCFRunLoopDefaultMode)
            inbox.attach(runLoop: runLoop, source: source, callbacks: callbacks)
            let multi = CurlMulti(runLoop: runLoop, callbacks: callbacks)
            started.publish(.init(runLoop: runLoop, source: source, multi: multi, callbacks: callbacks,
                                  thread: pthread_self()))
            // A run loop returns when it has no sources left; ours always has the inbox and the
            // epoll source, so this call returns only when stop() stops it.
            while !loop.isStopped {
                CFRunLoopRun()
            }
            loop.ended.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
        let context = started.wait()
        self.own = Handover(context)
        self.thread = context.thread
        self.inbox = inbox
        self.loop = loop
        if let problem = Libcurl.versionProblem {
            // Said once, where an operator looks; every transfer then fails with it.
            FileHandle.standardError.write(Data("HTTPOperations: \(problem)\n".utf8))
        }
    }

    /// Runs `job` on the network thread, after the jobs queued before it.
    ///
    /// Never blocks: the job is queued and the run loop woken only when the inbox was empty.
    ///
    /// - Returns: false when the thread has stopped: the job will never run.
    @discardableResult
    func perform(_ job: @escaping @Sendable () -> Void) -> Bool {
        inbox.enqueue(job)
    }

    // MARK: - Stopping

    /// A connection was made: the thread does not stop until it is reported. Call before its
    /// first ``perform(_:)``.
    func connectionStarted() {
        liveConnections.add(1, ordering: .sequentiallyConsistent)
    }

    /// A connection was reported (or never got to the thread).
    func connectionEnded() {
        liveConnections.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Whether the thread has stopped.
    var isStopped: Bool { inbox.isClosed }

    /// Stops the thread if no connection lives and no job waits: the inbox refuses every later
    /// job (``perform(_:)`` returns false), curl closes its kept connections and frees its
    /// handles, and the thread ends. Refused while anything is under way, so nothing is cut
    /// short and no job is lost.
    ///
    /// The check and the closing happen under the inbox's lock, and a connection is counted
    /// before its first job is queued: a connection counted after the check finds the inbox
    /// closed, and one counted before it stops the stop.
    ///
    /// - Returns: Whether the thread is stopped (true when it already was).
    func stop() async -> Bool {
        await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            let queued = perform { [self] in
                let idle = multi.isIdle
                let closed = inbox.closeIfIdle { idle && liveConnections.load(ordering: .sequentiallyConsistent) == 0 }
                if closed {
                    multi.close()
                    loop.stop()
                    CFRunLoopStop(own.value.runLoop)
                }
                done.resume(returning: closed)
            }
            if !queued { done.resume(returning: true) }
        }
    }
}

/// Whether the network thread's loop should end: set by the stop job and read by the loop,
/// both on the network thread (an atomic all the same: it costs nothing once per loop pass).
final class RunLoopControl: Sendable {
    private let stopped = Atomic(false)
    /// Signalled once the thread's closure has returned (for tests).
    let ended = DispatchSemaphore(value: 0)

    /// Whether the loop should end.
    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Ends the loop when the run loop next returns.
    func stop() { stopped.store(true, ordering: .relaxed) }
}

// MARK: - Inbox

/// Jobs from other threads, drained by a version-0 run-loop source on the network thread.
private final class Inbox: Sendable {
    /// Pending jobs, and the run loop to wake. Guarded by the mutex; the source and run loop
    /// are set once by `attach` before any job can be enqueued by another thread.
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        /// Set once by `closeIfIdle`: no job is taken any more.
        var closed = false
        /// CFRunLoopSourceSignal and CFRunLoopWakeUp are safe from any thread.
        var target: Handover<(runLoop: CFRunLoop, source: CFRunLoopSource)>?
        /// Set once by `attach`; used by `drain`, on the network thread only.
        var callbacks: Handover<CallbackHandoff>?
    }

    private let state = Mutex(State())

    func makeSource() -> CFRunLoopSource {
        var context = CFRunLoopSourceContext()
        context.version = 0
        context.info = Unmanaged.passUnretained(self).toOpaque()
        context.perform = { info in
            Unmanaged<Inbox>.fromOpaque(info!).takeUnretainedValue().drain()
        }
        return CFRunLoopSourceCreate(kCFAllocatorDefault, 0, &context)
    }

    /// Called once on the network thread, before `NetworkThread.shared` exists, so before any
    /// job can be enqueued.
    func attach(runLoop: CFRunLoop, source: CFRunLoopSource, callbacks: CallbackHandoff) {
        let target = Handover((runLoop: runLoop, source: source))
        let callbacks = Handover(callbacks)
        state.withLock {
            $0.target = target
            $0.callbacks = callbacks
        }
    }

    /// Queues `job`; false when the inbox is closed.
    func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, wake) = state.withLock { state -> (Bool, Handover<(runLoop: CFRunLoop, source: CFRunLoopSource)>?) in
            guard !state.closed else { return (false, nil) }
            state.jobs.append(job)
            // Only the first job of a batch signals: later ones ride on the same wake-up.
            guard state.jobs.count == 1 else { return (true, nil) }
            return (true, state.target)
        }
        if let (runLoop, source) = wake?.value {
            CFRunLoopSourceSignal(source)
            CFRunLoopWakeUp(runLoop)
        }
        return accepted
    }

    /// Closes the inbox if no job waits and `idle()` (asked under the lock) says so.
    func closeIfIdle(_ idle: () -> Bool) -> Bool {
        state.withLock { state in
            guard state.jobs.isEmpty, idle() else { return false }
            state.closed = true
            return true
        }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    private func drain() {
        let (taken, callbacks) = state.withLock { state in
            let jobs = state.jobs
            state.jobs.removeAll(keepingCapacity: true)
            return (jobs, state.callbacks!)
        }
        var jobs = taken
        callbacks.value.collect {
            for job in jobs {
                job()
            }
            // Released before the batch leaves: a job may hold the last reference to an
            // operation whose outcome it decided, and that must die on its callback queue.
            jobs.removeAll()
        }
    }
}

// MARK: - Start-up

/// Hands the run loop and multi handle from the new thread to `NetworkThread.init`.
private final class StartupHandshake: Sendable {
    /// What the network thread made for itself.
    struct Context {
        let runLoop: CFRunLoop
        let source: CFRunLoopSource
        let multi: CurlMulti
        let callbacks: CallbackHandoff
        let thread: pthread_t
    }

    /// Written once by the network thread before `ready.signal()`, read after `ready.wait()`.
    /// The references are shared, not moved: the thread goes on using its run loop and multi
    /// handle while `NetworkThread.init` stores them, and `init` only stores them; every later
    /// use is through the accessors that check the thread.
    private let context = Mutex<Handover<Context>?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func publish(_ context: Context) {
        let handed = Handover(context)
        self.context.withLock { $0 = handed }
        ready.signal()
    }

    func wait() -> Context {
        ready.wait()
        return context.withLock { $0! }.value
    }
}
