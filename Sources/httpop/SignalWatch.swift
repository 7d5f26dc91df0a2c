import Dispatch
import Foundation
import Synchronization

/// Runs a handler, once, on the first SIGINT or SIGTERM (which then no longer end the process
/// by themselves).
///
/// Not Sendable: made and cancelled on the thread that runs the command.
final class SignalWatch {
    private let sources: [any DispatchSourceSignal]
    /// Never signalled: for a handler that ends the process.
    private let handled = DispatchSemaphore(value: 0)
    private let started = Flag()

    /// Set once, by the first signal.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)

        /// Sets the flag; true when it was not set before.
        func set() -> Bool { !value.exchange(true, ordering: .relaxed) }

        var isSet: Bool { value.load(ordering: .relaxed) }
    }

    /// Watches for the signals; `handler` runs in a task of its own (it may exit the process).
    init(_ handler: @escaping @Sendable () async -> Void) {
        // A parent may have started us with these blocked (libdispatch's threads block them,
        // and children inherit the mask); a blocked signal would never reach the source.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        let started = started
        sources = [SIGINT, SIGTERM].map { number in
            // Ignored first, so the default action does not end the process before dispatch
            // hears about it.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                guard started.set() else { return }
                Task { await handler() }
            }
            source.resume()
            return source
        }
    }

    /// Whether a signal came.
    var wasSignalled: Bool { started.isSet }

    /// After a signal, waits for the handler to exit the process (a handler that does);
    /// returns at once otherwise.
    func waitIfSignalled() {
        guard started.isSet else { return }
        handled.wait()
    }

    /// Stops watching: the signals end the process again.
    func cancel() {
        sources.forEach { $0.cancel() }
        for number in [SIGINT, SIGTERM] { signal(number, SIG_DFL) }
    }
}
