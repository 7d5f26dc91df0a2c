import Foundation

/// The operation's total timeout (``OperationConfiguration/totalTimeout``): one timer for the
/// whole operation, armed when its connection begins.
extension TransferDriver {
    /// Fails the operation with `URLError(.timedOut)` `limit` from now, whatever it is doing
    /// then, unless its outcome was given before. One timer for the whole operation: it
    /// covers transfers, retry waits, block decisions and pauses alike.
    func armDeadline(after limit: Duration) {
        // Longer than about 292 years is no limit (`.seconds(Int64.max)`): nothing to arm.
        // Multiplying its seconds here would trap, on the network thread.
        guard let delay = limit.dispatchDelay else { return }
        let connection = WeakTransferDriver(self)
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
            NetworkThread.shared.perform {
                guard let self = connection.value, !self.withMachine({ $0.isFinished }) else { return }
                self.log("total timeout", ["httpop.limit": "\(limit)"])
                self.fail(URLError(.timedOut, url: self.request.url,
                                   description: "The operation did not finish within its total timeout of \(limit)."))
            }
        }
    }
}

/// A weak reference to a transfer driver that a timer can carry to the network thread, where it is
/// read: a timer must not keep a finished operation's driver alive until it fires. Sendable
/// without a promise: the reference is set once (`weak let`), and a weak load is atomic.
private final class WeakTransferDriver: Sendable {
    weak let value: TransferDriver?

    init(_ value: TransferDriver) {
        self.value = value
    }
}
