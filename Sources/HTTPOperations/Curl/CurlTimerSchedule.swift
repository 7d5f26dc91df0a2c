import CoreFoundation

/// The bookkeeping of ``CurlMulti``'s one run-loop timer, as a value with no I/O: each event
/// (curl's timer callback, our own "run curl soon", the timer firing) updates the dates and
/// returns the one thing ``CurlMulti`` must do, so the transitions are tested without curl.
///
/// Two dates are kept:
/// - ``requestedDate``: when curl last asked to be called, through `CURLMOPT_TIMERFUNCTION`.
///   curl calls that function only when its next timeout *changes*, so this date is the only
///   record of a timeout curl is waiting for: once lost, curl never repeats it.
/// - ``armedDate``: when the run-loop timer fires. Moving a CF timer costs a
///   `timerfd_settime`, so it moves only *earlier* when curl asks; a later or deleted timeout
///   is just remembered, and a firing before it moves the timer once to ``requestedDate``.
///
/// curl's timer is one-shot (Docs/Architecture.md): a firing that finds curl's date due calls
/// curl once and clears both dates. Only curl arms it again, through its callback.
struct CurlTimerSchedule: Equatable {
    /// What ``CurlMulti`` must do after an event.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Signal the due-now source: run curl's timeouts on the run loop's next pass, with
        /// no system call.
        case runSoon
        /// Move the run-loop timer's fire date.
        case moveTimer(to: CFAbsoluteTime)
        /// Run curl's due timeouts now (`curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`).
        case runDueTimers
    }

    /// A date far enough away to mean "never" without overflowing CF's arithmetic.
    let never: CFAbsoluteTime
    /// When the run-loop timer fires; ``never`` when it does not.
    private(set) var armedDate: CFAbsoluteTime
    /// When curl last asked to be called; ``never`` when it asked for no timeout or for
    /// "now", or that timeout was run. Never earlier than ``armedDate``.
    private(set) var requestedDate: CFAbsoluteTime

    init(never: CFAbsoluteTime) {
        self.never = never
        armedDate = never
        requestedDate = never
    }

    /// curl's timer callback: -1 deletes its timeout, 0 means "as soon as possible", any
    /// other value is milliseconds from `now` (read only for those).
    mutating func curlAsked(milliseconds: Int, now: @autoclosure () -> CFAbsoluteTime) -> Action {
        if milliseconds == 0 {
            // Every new transfer asks for this. curl reports its next timeout once the due
            // work has run: the date it reported last is spent then, so it changes.
            requestedDate = never
            return .runSoon
        }
        let date = milliseconds < 0 ? never : now() + Double(milliseconds) / 1000
        requestedDate = date
        guard date < armedDate else { return .none }
        armedDate = date
        return .moveTimer(to: date)
    }

    /// Our own request for a pass of curl's timeouts soon (after `curl_easy_pause`, which
    /// does not call the timer callback on this libcurl).
    ///
    /// Not curl's 0: it leaves ``requestedDate`` alone. curl's next timeout has not changed,
    /// so curl will not report it again after the pass; erasing it here (as this once did,
    /// by going through ``curlAsked(milliseconds:now:)`` with 0) lost another transfer's
    /// pending timeout until some unrelated event, for good in a quiet process.
    func runSoon() -> Action {
        .runSoon
    }

    /// The run-loop timer fired at `now` (CF has already moved it decades on).
    mutating func timerFired(now: CFAbsoluteTime) -> Action {
        armedDate = never
        if requestedDate > now {
            guard requestedDate < never else { return .none }
            armedDate = requestedDate
            return .moveTimer(to: requestedDate)
        }
        requestedDate = never
        return .runDueTimers
    }
}
