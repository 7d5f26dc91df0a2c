#if DEBUG
/// Points in the driver where a test can act, on the network thread, between two of its steps:
/// to replay an interleaving of a caller's thread and the network thread that timing alone
/// makes rare (a pause as a head arrives, a resume as a transfer's end is judged). Debug
/// builds only; release builds have neither the type nor the calls.
enum DriverSeam: Sendable, Hashable {
    /// A final head of the current transfer, before the machine hears of it.
    case headArriving
    /// The current transfer's end, before the machine hears of it.
    case completing
}

extension URLConnectionOperation {
    /// What a test runs at each ``DriverSeam`` of this operation's driver, on the network
    /// thread (it may wait there for a caller's thread).
    var driverSeam: (@Sendable (DriverSeam) -> Void)? {
        get { state.withLock { $0.driverSeam } }
        set { state.withLock { $0.driverSeam = newValue } }
    }
}

extension TransferDriver {
    /// Runs the test's action for `seam`, if any.
    func reach(_ seam: DriverSeam) {
        operation.driverSeam?(seam)
    }
}
#endif
