import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    /// Numbers a server sends (`Content-Range`, `Content-Length`, `Retry-After`, `Age`,
    /// `max-age`) are read as checked values: an extreme one is a typed error or "invalid",
    /// never a trap on the network thread that takes the whole process down.
    @Suite struct ServerNumbers {
        /// The extremes every parser is fed.
        static let extremes = [
            "0", "-1", "-0", "+1", "+0", " 1", "1 ", "1 2", "", "00", "0x10", "1e3", "１",
            "9223372036854775806", "9223372036854775807", "9223372036854775808",
            "18446744073709551615", "18446744073709551616", "99999999999999999999",
            "000000000000000000000000000000001",
        ]

        @Test(arguments: extremes)
        func aDecimalIsDigitsOnlyAndNeverOverflows(text: String) {
            let parsed = HTTPDecimal.parse(text)
            let digitsOnly = !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
            if !digitsOnly { #expect(parsed == nil, "\(text) is not 1*DIGIT") }
            if let parsed { #expect(String(parsed) == String(text.drop { $0 == "0" }).ifEmpty("0")) }
            if digitsOnly, text.count <= 18 { #expect(parsed != nil) }
        }

        /// The report: `bytes <held>-9223372036854775807/*` made `last + 1` trap.
        @Test(arguments: ServerNumbers.extremes)
        func aContentRangeWithAnyExtremeIsReadWithoutATrap(number: String) {
            for value in ["bytes 100-\(number)/*", "bytes \(number)-\(number)/\(number)", "bytes 100-200/\(number)",
                          "bytes \(number)-9223372036854775807/*", "bytes */\(number)"] {
                for status in [206, 416] {
                    let decision = ResumePolicy.decide(status: status, contentRange: value, held: 100, knownLength: nil)
                    if case .append(_, let end) = decision { #expect(end > 100 && end <= Int64.max) }
                }
            }
        }

        @Test func theReportedRangeIsMalformedNotACrash() {
            let value = "bytes 100-9223372036854775807/*"
            #expect(ResumePolicy.decide(status: 206, contentRange: value, held: 100, knownLength: nil)
                    == .refuse(.malformedContentRange(value)))
            #expect(ResumePolicy.decide(status: 206, contentRange: "bytes +100-200/300", held: 100, knownLength: nil)
                    == .refuse(.malformedContentRange("bytes +100-200/300")))
            #expect(ResumePolicy.decide(status: 206, contentRange: "bytes 100-9223372036854775806/9223372036854775807",
                                        held: 100, knownLength: nil)
                    == .append(completeLength: Int64.max, end: Int64.max))
            #expect(ContentRange.unsatisfiedLength("bytes */+100") == nil)
            #expect(ContentRange.unsatisfiedLength("bytes */-100") == nil)
        }

        @Test(arguments: ServerNumbers.extremes)
        func retryAfterAndAgeTakeDigitsOnly(number: String) {
            let delay = RetryPolicy.retryAfter(number, now: Date(timeIntervalSince1970: 0))
            let digitsOnly = !number.isEmpty && number.utf8.allSatisfy { (0x30...0x39).contains($0) }
            if !digitsOnly, number.trimmingCharacters(in: .whitespaces) == number { #expect(delay == nil, "\(number)") }
            if let delay { #expect(delay >= 0 && delay.isFinite) }
            if let seconds = CacheControl.deltaSeconds(number) { #expect((0...2_147_483_648).contains(seconds)) }
        }

        /// End to end, as `httpop download -C` met it: a file of 100 bytes continued, a 206
        /// whose last byte is `Int64.max`. The download fails with a typed error; the process
        /// lives, and the 100 bytes are kept.
        @Test func aResumeAnsweredWithTheLargestLastByteFailsTyped() async throws {
            let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 100-9223372036854775807/*\r\n"
                + "Content-Length: 10\r\n\r\n0123456789"
            let server = try FaultServer.start { _ in [.send(Array(head.utf8)), .closeWithFIN] }
            let file = temporaryFile()
            defer { removeDownload(file) }
            try Data(repeating: 7, count: 100).write(to: file)
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/f")!))
            op.destinationURL = file
            op.resumesExistingFile = true
            let error = try #require(try await run(op).error as? ResumeError)
            #expect(error.reason == .malformedContentRange("bytes 100-9223372036854775807/*"))
            #expect(try Data(contentsOf: file) == Data(repeating: 7, count: 100))
        }
    }
}

private extension String {
    func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
