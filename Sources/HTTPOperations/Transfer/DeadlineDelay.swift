import Dispatch

extension Duration {
    /// This duration as the delay of a `DispatchQueue.asyncAfter`, for a deadline such as
    /// ``OperationConfiguration/totalTimeout``; nil when it is too long to ever pass, that is,
    /// longer than `Int.max` nanoseconds (about 292 years), which is how `.seconds(Int64.max)`
    /// says "no limit". A negative duration is no delay. Below a nanosecond, truncated.
    ///
    /// Multiplying the seconds by 10⁹ in `Int` would trap for any duration past those 292
    /// years, on the network thread, taking the process down; here no arithmetic can
    /// overflow.
    var dispatchDelay: DispatchTimeInterval? {
        guard self > .zero else { return .nanoseconds(0) }
        let (seconds, attoseconds) = components
        let (whole, overflowed) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflowed else { return nil }
        // attoseconds is in 0..<10¹⁸ for a positive duration: at most 999,999,999 nanoseconds.
        let (nanoseconds, tooLong) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !tooLong, let delay = Int(exactly: nanoseconds) else { return nil }
        return .nanoseconds(delay)
    }
}
