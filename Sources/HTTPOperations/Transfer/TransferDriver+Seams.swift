#if DEBUG
/// Points in the driver where a test can act, on the network thread, between two of its steps:
/// to replay an interleaving of a caller's thread and the network thread that timing alone
/// makes rare (a pause as a head arrives, a resume as a transfer's end is judged). Debug
/// builds only; release builds have neither the type nor the calls. The test's action is the
/// operation's (``URLConnectionOperation/driverSeam``).
enum DriverSeam: Sendable, Hashable {
    /// A final head of the current transfer, before the machine hears of it.
    case headArriving
    /// The current transfer's end, before the machine hears of it.
    case completing
}

extension TransferDriver {
    /// Runs the test's action for `seam`, if any.
    func reach(_ seam: DriverSeam) {
        operation.driverSeam?(seam)
    }
}
#endif
