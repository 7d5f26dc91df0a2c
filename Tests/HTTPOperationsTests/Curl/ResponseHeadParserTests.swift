import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// The network thread's header-line parser against a plain reading of the same lines.
    @Suite struct ResponseHeadParserAgreement {
        /// Random sequences of status lines, fields, folded lines, blank lines and junk, with
        /// spaces, tabs and line endings varied: every head and every trailers block the byte
        /// parser hands over must be the one `PlainHeadReading` (Strings and the standard
        /// library, no byte offsets) reads from the same lines. Checked after each line.
        ///
        /// The plain reading follows the same rules, so this holds the parser's mechanics
        /// (trimming, indices, the colon search, the hand-over of heads and trailers) to them,
        /// not the rules themselves; `headParser…` tests above and the fuzz test cover those.
        /// Its lines are ASCII: a `Character` can join a byte with what follows it.
        @Test func theByteParserReadsWhatAPlainReadingReads() {
            var random = SeededGenerator(for: "theByteParserReadsWhatAPlainReadingReads")
            var headsCompared = 0
            var trailersCompared = 0
            for sequence in 0..<6_000 {
                let lines = (0..<Int.random(in: 1...14, using: &random)).map { _ in Self.randomLine(using: &random) }
                var parser = ResponseHeadParser()
                var plain = PlainHeadReading()
                for (index, line) in lines.enumerated() {
                    let parsed = Array(line.utf8).withUnsafeBytes { parser.consume(line: $0) }
                    let expected = plain.consume(line)
                    guard parsed == expected else {
                        Issue.record("""
                            sequence \(sequence) (seed \(random.seed)), line \(index) \(line.debugDescription): \
                            parser \(String(describing: parsed)), plain reading \(String(describing: expected)); \
                            lines \(lines.map(\.debugDescription))
                            """)
                        return
                    }
                    if parsed != nil { headsCompared += 1 }
                }
                let trailers = parser.takeTrailers()
                guard trailers == plain.takeTrailers() else {
                    Issue.record("sequence \(sequence) (seed \(random.seed)): trailers \(String(describing: trailers)); lines \(lines.map(\.debugDescription))")
                    return
                }
                if trailers != nil { trailersCompared += 1 }
                #expect(parser.takeTrailers() == nil, "trailers are handed over once")
            }
            // The generator must reach both kinds of result, or the comparison proves little.
            #expect(headsCompared > 1_500)
            #expect(trailersCompared > 200)
            print("theByteParserReadsWhatAPlainReadingReads: \(headsCompared) heads, \(trailersCompared) trailer blocks compared")
        }

        private static func randomLine(using random: inout SeededGenerator) -> String {
            let space = ["", " ", "  ", "\t", " \t"]
            let ending = ["\r\n", "\r\n", "\r\n", "\n", "", "\r"]
            func pick(_ choices: [String]) -> String { choices.randomElement(using: &random)! }
            let line: String
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1:
                line = pick(space) + pick(["HTTP/1.1", "HTTP/2", "HTTP/1.0", "HTTP/"]) + pick([" ", "  ", ""])
                    + pick(["200", "100", "103", "101", "404", "2x0", "", "1234567890", "0", "999"])
                    + pick(["", " OK", " Continue", " "])
            case 2, 3, 4:
                line = pick(space) + pick(["Content-Type", "content-length", "X-Checksum", "Vary", "Set-Cookie", "a", ""])
                    + pick(space) + ":" + pick(space) + pick(["text/plain", "0", "a: b", "x,y", "", "urn:x:1"]) + pick(space)
            case 5, 6:
                line = ""
            case 7:
                line = pick([" ", "\t"]) + pick(["continued", "more: text", ""]) + pick(space)
            case 8:
                line = pick(["no colon here", "HTTP", "http/1.1 200", "HTTP1.1 200", ":", "::"])
            default:
                line = pick(space)
            }
            return line + pick(ending)
        }
    }
}

/// A reading of header lines written for clarity, not speed: each line as a `String`, trimmed
/// and split with the standard library. The rules are the parser's documented ones: a status
/// line (`HTTP/` after trimming) with a numeric code starts a head; a blank line ends it; a
/// field line needs a colon and belongs to the head being read, or to the trailers after a
/// final head; a line that starts with a space or tab continues the last value.
private struct PlainHeadReading {
    private var head: (status: Int, version: String, fields: [(name: String, value: String)])?
    private var afterFinalHead = false
    private var finalStatus = 0
    private var trailers: [(name: String, value: String)]?

    mutating func consume(_ line: String) -> ResponseHead? {
        let trimmed = Self.trim(line)
        if trimmed.isEmpty {
            guard let completed = head else { return nil }
            head = nil
            let result = ResponseHead(statusCode: completed.status, httpVersion: completed.version, fields: completed.fields)
            afterFinalHead = !result.isInterim
            finalStatus = completed.status
            return result
        }
        if trimmed.hasPrefix("HTTP/") {
            let version = String(trimmed.prefix { $0 != " " })
            let afterVersion = trimmed.dropFirst(version.count).drop { $0 == " " }
            let codeText = afterVersion.prefix { $0 != " " }
            if !codeText.isEmpty, codeText.count <= 9, codeText.allSatisfy({ ("0"..."9").contains($0) }) {
                head = (Int(codeText)!, version, [])
            } else {
                head = nil
            }
            afterFinalHead = false
            trailers = nil
        } else if let colon = trimmed.firstIndex(of: ":"), head != nil || afterFinalHead {
            let field = (name: Self.trim(String(trimmed[..<colon])), value: Self.trim(String(trimmed[trimmed.index(after: colon)...])))
            if head != nil {
                head!.fields.append(field)
            } else {
                trailers = (trailers ?? []) + [field]
            }
        } else if line.hasPrefix(" ") || line.hasPrefix("\t") {
            if head != nil, !head!.fields.isEmpty {
                head!.fields[head!.fields.count - 1].value += " " + trimmed
            } else if trailers != nil, !trailers!.isEmpty {
                trailers![trailers!.count - 1].value += " " + trimmed
            }
        }
        return nil
    }

    mutating func takeTrailers() -> ResponseHead? {
        defer { trailers = nil }
        return trailers.map { ResponseHead(statusCode: finalStatus, httpVersion: "", fields: $0) }
    }

    /// Without leading and trailing spaces, tabs, CR and LF. (Unicode scalars, since a Swift
    /// `Character` joins "\r\n" into one.)
    private static func trim(_ text: String) -> String {
        let scalars = text.unicodeScalars
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
              let last = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(scalars[first...last])
    }
}
