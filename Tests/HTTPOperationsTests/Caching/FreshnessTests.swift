import Foundation
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct FreshnessTests {
        struct LifetimeCase: Sendable, CustomTestStringConvertible {
            var testDescription: String
            var status: Int = 200
            var fields: [(name: String, value: String)]
            var expected: TimeInterval
        }

        static let lifetimeCases: [LifetimeCase] = [
            .init(testDescription: "max-age", fields: [("Cache-Control", "max-age=60")], expected: 60),
            .init(testDescription: "max-age beats Expires",
                  fields: [("Date", cacheHTTPDate(0)), ("Expires", cacheHTTPDate(500)), ("Cache-Control", "max-age=60")], expected: 60),
            .init(testDescription: "s-maxage ignored", fields: [("Cache-Control", "s-maxage=60")], expected: 0),
            .init(testDescription: "Expires minus Date",
                  fields: [("Date", cacheHTTPDate(-20)), ("Expires", cacheHTTPDate(80))], expected: 100),
            .init(testDescription: "Expires without Date uses response time",
                  fields: [("Expires", cacheHTTPDate(30))], expected: 30),
            .init(testDescription: "Expires 0", fields: [("Date", cacheHTTPDate(0)), ("Expires", "0")], expected: 0),
            .init(testDescription: "Expires garbage blocks heuristic",
                  fields: [("Date", cacheHTTPDate(0)), ("Expires", "never"), ("Last-Modified", cacheHTTPDate(-10_000))], expected: 0),
            .init(testDescription: "Expires before Date", fields: [("Date", cacheHTTPDate(0)), ("Expires", cacheHTTPDate(-60))], expected: 0),
            .init(testDescription: "heuristic 10%",
                  fields: [("Date", cacheHTTPDate(0)), ("Last-Modified", cacheHTTPDate(-10_000))], expected: 1_000),
            .init(testDescription: "heuristic capped at a day",
                  fields: [("Date", cacheHTTPDate(0)), ("Last-Modified", cacheHTTPDate(-30 * 86_400))], expected: 86_400),
            .init(testDescription: "heuristic for 404", status: 404,
                  fields: [("Date", cacheHTTPDate(0)), ("Last-Modified", cacheHTTPDate(-100))], expected: 10),
            .init(testDescription: "no heuristic for 500", status: 500,
                  fields: [("Date", cacheHTTPDate(0)), ("Last-Modified", cacheHTTPDate(-10_000))], expected: 0),
            .init(testDescription: "no heuristic for 302", status: 302,
                  fields: [("Date", cacheHTTPDate(0)), ("Last-Modified", cacheHTTPDate(-10_000))], expected: 0),
            .init(testDescription: "Last-Modified in the future", fields: [("Date", cacheHTTPDate(0)), ("Last-Modified", cacheHTTPDate(50))], expected: 0),
            .init(testDescription: "nothing", fields: [("Date", cacheHTTPDate(0))], expected: 0),
            // Found by review: an invalid max-age fell back to the heuristic (a day here).
            .init(testDescription: "invalid max-age is stale, not heuristic",
                  fields: [("Date", cacheHTTPDate(0)), ("Cache-Control", "max-age=abc"), ("Last-Modified", cacheHTTPDate(-30 * 86_400))], expected: 0),
            .init(testDescription: "negative max-age is stale",
                  fields: [("Date", cacheHTTPDate(0)), ("Cache-Control", "max-age=-1"), ("Last-Modified", cacheHTTPDate(-30 * 86_400))], expected: 0),
        ]

        @Test(arguments: lifetimeCases)
        func freshnessLifetime(_ testCase: LifetimeCase) {
            let response = makeCachedResponse(status: testCase.status, fields: testCase.fields)
            #expect(response.freshnessLifetime == testCase.expected)
        }

        struct AgeCase: Sendable, CustomTestStringConvertible {
            var testDescription: String
            var fields: [(name: String, value: String)]
            var requestTime: TimeInterval
            var responseTime: TimeInterval
            var now: TimeInterval
            var expected: TimeInterval
        }

        static let ageCases: [AgeCase] = [
            // apparent_age = max(0, 2 - (-3)) = 5; response_delay = 2;
            // corrected_age_value = 10 + 2 = 12; corrected_initial_age = max(5, 12) = 12;
            // resident_time = 102 - 2 = 100; current_age = 112.
            .init(testDescription: "Age field dominates", fields: [("Date", cacheHTTPDate(-3)), ("Age", "10")],
                  requestTime: 0, responseTime: 2, now: 102, expected: 112),
            // apparent_age = 5 dominates corrected_age_value = 0 + 2.
            .init(testDescription: "apparent age dominates", fields: [("Date", cacheHTTPDate(-3))],
                  requestTime: 0, responseTime: 2, now: 12, expected: 15),
            // Date ahead of our clock: apparent_age = 0, corrected_age_value = 2.
            .init(testDescription: "clock skew", fields: [("Date", cacheHTTPDate(60))],
                  requestTime: 0, responseTime: 2, now: 2, expected: 2),
            // Without Date, date_value = response_time: apparent_age 0; delay 4 + Age 30.
            .init(testDescription: "no Date", fields: [("Age", "30")],
                  requestTime: 0, responseTime: 4, now: 10, expected: 40),
            .init(testDescription: "invalid Age ignored", fields: [("Date", cacheHTTPDate(0)), ("Age", "-5")],
                  requestTime: 0, responseTime: 0, now: 7, expected: 7),
            // §5.1: a list is read by its first member (issue 38: `7200, 0` was read as 0).
            .init(testDescription: "Age list", fields: [("Date", cacheHTTPDate(0)), ("Age", "7200, 0")],
                  requestTime: 0, responseTime: 0, now: 7, expected: 7_207),
            .init(testDescription: "two Age fields", fields: [("Date", cacheHTTPDate(0)), ("Age", "7200"), ("Age", "0")],
                  requestTime: 0, responseTime: 0, now: 7, expected: 7_207),
        ]

        @Test(arguments: ageCases)
        func currentAge(_ testCase: AgeCase) {
            let response = makeCachedResponse(fields: testCase.fields,
                                        requestTime: cacheTime(testCase.requestTime), responseTime: cacheTime(testCase.responseTime))
            #expect(response.currentAge(now: cacheTime(testCase.now)) == testCase.expected)
        }

        @Test func freshUntilAgeReachesLifetime() {
            let response = makeCachedResponse(fields: [("Date", cacheHTTPDate(0)), ("Cache-Control", "max-age=60"), ("Age", "10")])
            #expect(response.isFresh(now: cacheTime(49)))
            #expect(!response.isFresh(now: cacheTime(50)))
        }
    }
}
