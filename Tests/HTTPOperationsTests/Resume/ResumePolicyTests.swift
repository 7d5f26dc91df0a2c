import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// How a range answer is read, without sockets.
    @Suite struct ResumePolicyRules {
        typealias Decision = ResumePolicy.Decision

        @Test(arguments: [
            // 206 at the offset appends; the complete length comes from Content-Range.
            (206, "bytes 100-999/1000", 100, nil, Decision.append(completeLength: 1000, end: 1000)),
            (206, "bytes 100-999/*", 100, 1000, Decision.append(completeLength: 1000, end: 1000)),
            (206, "bytes 100-999/*", 100, nil, Decision.append(completeLength: nil, end: 1000)),
            (206, "bytes 100-499/1000", 100, nil, Decision.append(completeLength: 1000, end: 500)),
            // 206 at another offset, a malformed or missing range, or a changed length refuse.
            (206, "bytes 0-999/1000", 100, nil, Decision.refuse(.rangeStartMismatch(expected: 100, received: 0))),
            (206, "bytes 200-999/1000", 100, 1000, Decision.refuse(.rangeStartMismatch(expected: 100, received: 200))),
            (206, nil, 100, nil, Decision.refuse(.malformedContentRange(nil))),
            (206, "bytes 100-99/1000", 100, nil, Decision.refuse(.malformedContentRange("bytes 100-99/1000"))),
            (206, "bytes 100-999/999", 100, nil, Decision.refuse(.malformedContentRange("bytes 100-999/999"))),
            (206, "items 100-999/1000", 100, nil, Decision.refuse(.malformedContentRange("items 100-999/1000"))),
            (206, "bytes 100-1999/2000", 100, 1000, Decision.refuse(.lengthChanged(expected: 1000, received: 2000))),
            // A range of unknown total that runs past the known length shows a longer
            // version: another version (issue 38's campaign: its bytes were appended beyond the
            // known length, and the resume state named more bytes than its version had).
            (206, "bytes 100-1999/*", 100, 1000, Decision.refuse(.lengthChanged(expected: 1000, received: 2000))),
            (206, "bytes 100-1000/*", 100, 1000, Decision.refuse(.lengthChanged(expected: 1000, received: 1001))),
            // 200 restarts from zero.
            (200, nil, 100, 1000, Decision.restartFromZero),
            // 416 completes only when the complete length is what is held.
            (416, "bytes */1000", 1000, 1000, Decision.alreadyComplete),
            (416, "bytes */1000", 1000, nil, Decision.alreadyComplete),
            (416, "bytes */1000", 900, 1000, Decision.refuse(.unsatisfiableRange(held: 900, length: 1000))),
            (416, nil, 1000, 1000, Decision.refuse(.unsatisfiableRange(held: 1000, length: nil))),
            (416, "bytes */1000", 1000, 1200, Decision.refuse(.unsatisfiableRange(held: 1000, length: 1000))),
            // Another 2xx is neither part of the resource nor the whole of it (before: reported
            // as a success beside a partial file).
            (203, nil, 100, 1000, Decision.refuse(.unexpectedStatus(203))),
            (204, nil, 100, 1000, Decision.refuse(.unexpectedStatus(204))),
            (202, nil, 100, nil, Decision.refuse(.unexpectedStatus(202))),
            // Anything else is not an answer to the range.
            (404, nil, 100, nil, Decision.notARangeAnswer),
            (503, nil, 100, nil, Decision.notARangeAnswer),
        ] as [(Int, String?, Int64, Int64?, Decision)])
        func decisions(status: Int, contentRange: String?, held: Int64, knownLength: Int64?, expected: Decision) {
            #expect(ResumePolicy.decide(status: status, contentRange: contentRange, held: held, knownLength: knownLength) == expected)
        }

        @Test func resumeDataRoundTripsThroughReadableJSON() throws {
            let data = ResumeData(url: URL(string: "http://a.test/f.iso")!, headers: ["Accept": "*/*", "Authorization": "secret"],
                                  validator: .entityTag("\"v1\""), offset: 42, expectedLength: 100,
                                  destination: URL(fileURLWithPath: "/tmp/f.iso"))
            let json = String(decoding: try data.encoded(), as: UTF8.self)
            #expect(json.contains(#""entityTag" : "\"v1\"""#))
            #expect(json.contains("http://a.test/f.iso"))
            #expect(!json.contains("secret"), "credentials are never saved")
            #expect(try ResumeData(from: try data.encoded()) == data)
            var future = data
            future.version = 99
            let unreadable = #expect(throws: ResumeError.self) { try ResumeData(from: try JSONEncoder().encode(future)) }
            #expect(unreadable?.code == .unsupportedResumeDataVersion)
            #expect(unreadable?.reason == .unsupportedResumeDataVersion(found: 99, readable: ResumeData.currentVersion))
            #expect(throws: DecodingError.self) { try ResumeData(from: Data("{}".utf8)) }
        }

        /// RFC 9110 §13.1.5: `If-Range` takes a strong ETag; a date only when there is no ETag
        /// at all and the date is strong (§8.8.2.2: a second or more before the `Date`).
        @Test func ifRangeTakesAStrongValidatorOnly() {
            let modified = "Sat, 21 Nov 2026 10:00:00 GMT", later = "Sat, 21 Nov 2026 10:00:01 GMT"
            #expect(ResumeValidator(etag: "\"v1\"", lastModified: modified, date: later) == .entityTag("\"v1\""))
            #expect(ResumeValidator(etag: "\"v1\"", lastModified: modified, date: nil) == .entityTag("\"v1\""))
            // A weak ETag is never sent, and rules the date out (the report: it was sent).
            #expect(ResumeValidator(etag: "W/\"v1\"", lastModified: modified, date: later) == nil)
            #expect(ResumeValidator(etag: "W/\"v1\"", lastModified: nil, date: later) == nil)
            #expect(ResumeValidator(etag: nil, lastModified: modified, date: later) == .lastModified(modified))
            // Modified in the second it was served, or no Date to tell: weak (the report: sent).
            #expect(ResumeValidator(etag: nil, lastModified: modified, date: modified) == nil)
            #expect(ResumeValidator(etag: nil, lastModified: modified, date: nil) == nil)
            #expect(ResumeValidator(etag: nil, lastModified: "yesterday", date: later) == nil)
            #expect(ResumeValidator(etag: nil, lastModified: nil, date: later) == nil)
        }
    }
}
