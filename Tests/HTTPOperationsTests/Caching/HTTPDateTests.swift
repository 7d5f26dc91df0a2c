import Foundation
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct HTTPDateTests {
        /// 1994-11-06 08:49:37 UTC, the example of RFC 9110 §5.6.7.
        static let example = Date(timeIntervalSince1970: 784_111_777)

        @Test(arguments: [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "  Sun, 06 Nov 1994 08:49:37 GMT  ",
        ])
        func parsesAllThreeForms(text: String) {
            #expect(HTTPDate.parse(text) == Self.example)
        }

        @Test(arguments: ["", "0", "-1", "tomorrow", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT"])
        func rejectsInvalidDates(text: String) {
            #expect(HTTPDate.parse(text) == nil)
        }

        /// The report: `DateFormatter` with `isLenient = false` took each of these as valid,
        /// and a response whose `Expires` was one was served from the cache. RFC 9110 §5.6.7
        /// has three forms and nothing else.
        @Test(arguments: [
            "Sun 06 Nov 1994 08:49:37 GMT",          // no comma
            "Sun,  06 Nov 1994 08:49:37 GMT",        // two spaces
            "Sun, 06-Nov-1994 08:49:37 GMT",         // dashes in IMF-fixdate
            "Sun, 06 Nov 1994 08.49.37 GMT",         // dots in the time
            "Sun, 06 Nov 1994 8:49:37 GMT",          // one-digit hour
            "Sun, 6 Nov 1994 08:49:37 GMT",          // one-digit day
            "Sun, 06 nov 1994 08:49:37 GMT",         // month in lower case
            "Sun, 06 Nov 94 08:49:37 GMT",           // two-digit year in IMF-fixdate
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 29 Feb 1994 08:49:37 GMT",         // no 29 February in 1994
            "Sun, 06 Nov 1994 08:49:37 GMT x",
            "Sunday, 06 Nov 1994 08:49:37 GMT",      // the long name with IMF-fixdate
            "Sun, 06-Nov-94 08:49:37 GMT",           // the short name with RFC 850
            "Sunday, 06-Nov-94 8:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",               // asctime's day is two characters
            "Sun Nov  06 08:49:37 1994",
            "Sun Nov  6 08:49:37 94",
            "Sun, 06 Nov 1994 08:49:37 GMT\u{0}",
        ])
        func rejectsWhatTheGrammarDoesNot(text: String) {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }

        @Test func readsEdgesOfTheCalendar() {
            #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == Date(timeIntervalSince1970: 0))
            #expect(HTTPDate.parse("Tue, 29 Feb 2000 12:00:00 GMT") == Date(timeIntervalSince1970: 951_825_600))
            #expect(HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT") == Date(timeIntervalSince1970: 1_483_228_800))
            #expect(HTTPDate.parse("Mon, 01 Jan 0001 00:00:00 GMT") == Date(timeIntervalSince1970: -62_135_596_800))
            // RFC 850's two-digit year: more than 50 years ahead is the past century.
            let now = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11
            #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == Self.example)
            #expect(HTTPDate.parse("Friday, 01-Jan-66 00:00:00 GMT", now: now).map { $0 > now } == true)
            #expect(HTTPDate.parse("Saturday, 01-Jan-77 00:00:00 GMT", now: now).map { $0 < now } == true)
        }

        @Test func formatsIMFFixdate() {
            #expect(HTTPDate.format(Self.example) == "Sun, 06 Nov 1994 08:49:37 GMT")
            #expect(HTTPDate.parse(HTTPDate.format(cacheEpoch)) == cacheEpoch)
        }

        @Test func isSafeFromManyThreads() async {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        (0..<200).allSatisfy { _ in HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Self.example }
                    }
                }
                for await result in group { #expect(result) }
            }
        }
    }
}
