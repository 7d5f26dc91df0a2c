import CoreFoundation
@testable import HTTPOperations
import Testing

/// ``CurlTimerSchedule``: the network thread's one timer, event by event, with no curl and no
/// run loop. Dates are seconds from 0; curl asks in milliseconds.
extension AllTests {
    @Suite struct CurlTimerScheduleTests {
        static let never: CFAbsoluteTime = 1e9

        @Test func anEarlierTimeoutMovesTheTimerALaterOneIsOnlyRemembered() {
            var schedule = CurlTimerSchedule(never: Self.never)
            #expect(schedule.curlAsked(milliseconds: 5_000, now: 0) == .moveTimer(to: 5))
            #expect(schedule.curlAsked(milliseconds: 1_000, now: 0) == .moveTimer(to: 1))
            // Later: no timerfd_settime now; the firing at 1 moves the timer once.
            #expect(schedule.curlAsked(milliseconds: 3_000, now: 0.5) == .none)
            #expect(schedule.timerFired(now: 1) == .moveTimer(to: 3.5))
            #expect(schedule.timerFired(now: 3.5) == .runDueTimers)
        }

        @Test func curlsTimerIsOneShotOnlyCurlArmsItAgain() {
            var schedule = CurlTimerSchedule(never: Self.never)
            #expect(schedule.curlAsked(milliseconds: 1_000, now: 0) == .moveTimer(to: 1))
            #expect(schedule.timerFired(now: 1) == .runDueTimers)
            // Nothing is armed or remembered after the run: re-arming here would spin.
            #expect(schedule.armedDate == Self.never && schedule.requestedDate == Self.never)
            #expect(schedule.curlAsked(milliseconds: 2_000, now: 1) == .moveTimer(to: 3))
        }

        @Test func aDeletedTimeoutIsNotRunWhenTheTimerFires() {
            var schedule = CurlTimerSchedule(never: Self.never)
            #expect(schedule.curlAsked(milliseconds: 1_000, now: 0) == .moveTimer(to: 1))
            #expect(schedule.curlAsked(milliseconds: -1, now: 0.2) == .none)
            #expect(schedule.timerFired(now: 1) == .none)
            #expect(schedule.armedDate == Self.never)
        }

        @Test func curlsOwnZeroRunsOnTheNextPass() {
            var schedule = CurlTimerSchedule(never: Self.never)
            #expect(schedule.curlAsked(milliseconds: 0, now: 0) == .runSoon)
        }

        /// Issue 24: our own "run now" (after `curl_easy_pause`) erased the date curl had asked
        /// for. curl calls its timer callback only when its next timeout changes, so the pass
        /// that follows reports nothing, and the timer then fired into an empty schedule: the
        /// other transfer's timeout (a connect or idle timeout, a retry) waited for some
        /// unrelated event, for good in a quiet process.
        @Test func ourOwnRunSoonKeepsTheTimeoutCurlIsWaitingFor() {
            var schedule = CurlTimerSchedule(never: Self.never)
            #expect(schedule.curlAsked(milliseconds: 5_000, now: 0) == .moveTimer(to: 5))
            #expect(schedule.runSoon() == .runSoon)
            // The pass runs; curl's next timeout is still 5, unchanged, so it says nothing.
            #expect(schedule.requestedDate == 5)
            #expect(schedule.timerFired(now: 5) == .runDueTimers)
        }

        /// The same, with the timer armed earlier than curl's date (a later timeout was only
        /// remembered): the firing must still move the timer to it.
        @Test func ourOwnRunSoonKeepsARememberedLaterTimeout() {
            var schedule = CurlTimerSchedule(never: Self.never)
            #expect(schedule.curlAsked(milliseconds: 1_000, now: 0) == .moveTimer(to: 1))
            #expect(schedule.curlAsked(milliseconds: 3_000, now: 0.5) == .none)
            #expect(schedule.runSoon() == .runSoon)
            #expect(schedule.timerFired(now: 1) == .moveTimer(to: 3.5))
            #expect(schedule.timerFired(now: 3.5) == .runDueTimers)
        }
    }
}
