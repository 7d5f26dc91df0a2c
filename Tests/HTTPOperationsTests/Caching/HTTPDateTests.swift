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
