#if DEBUG
extension URLConnectionOperation {
    /// What a test runs at each ``DriverSeam`` of this operation's driver, on the network
    /// thread (it may wait there for a caller's thread). Debug builds only.
    var driverSeam: (@Sendable (DriverSeam) -> Void)? {
        get { state.withLock { $0.driverSeam } }
        set { state.withLock { $0.driverSeam = newValue } }
    }
}
#endif
