import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// The WHATWG HTML standard's "Interpreting an event stream", case by case: every row is
    /// parsed whole, then again split at every byte boundary (and byte by byte), and must give
    /// the same events, in the same order, with the same last event id.
    @Suite struct EventStreamParsing {
        struct Row: CustomTestStringConvertible, Sendable {
            let name: String
            let stream: [UInt8]
            let events: [ServerSentEvent]
            let lastEventID: String
            let retry: Int?

            init(_ name: String, _ stream: String, _ events: [ServerSentEvent], lastEventID: String = "", retry: Int? = nil) {
                self.init(name, Array(stream.utf8), events, lastEventID: lastEventID, retry: retry)
            }

            init(_ name: String, _ stream: [UInt8], _ events: [ServerSentEvent], lastEventID: String = "", retry: Int? = nil) {
                self.name = name
                self.stream = stream
                self.events = events
                self.lastEventID = lastEventID
                self.retry = retry
            }

            var testDescription: String { name }
        }

        static func message(_ data: String, id: String = "", type: String = "message") -> ServerSentEvent {
            ServerSentEvent(event: type, data: data, lastEventID: id)
        }

        static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]

        static let rows: [Row] = [
            Row("one data line", "data: hello\n\n", [message("hello")]),
            Row("two data lines joined by LF", "data: a\ndata: b\n\n", [message("a\nb")]),
            Row("CRLF line ends", "data: a\r\ndata: b\r\n\r\n", [message("a\nb")]),
            Row("CR line ends", "data: a\rdata: b\r\r", [message("a\nb")]),
            Row("mixed line ends", "data: a\r\ndata: b\rdata: c\n\r\n", [message("a\nb\nc")]),
            Row("only one space after the colon is dropped", "data:  two\ndata:none\n\n", [message(" two\nnone")]),
            Row("a field with no colon has an empty value", "data\n\n", [message("")]),
            Row("an empty data line adds an empty line", "data\ndata\n\n", [message("\n")]),
            Row("a trailing empty data line keeps one LF", "data: a\ndata\n\n", [message("a\n")]),
            Row("comments are ignored", ": hello\ndata: x\n:\n\n", [message("x")]),
            Row("unknown fields are ignored", "foo: bar\ndata: x\nDATA: y\n\n", [message("x")]),
            Row("event names the type", "event: add\ndata: 1\n\n", [message("1", type: "add")]),
            Row("the type does not carry over", "event: add\ndata: 1\n\ndata: 2\n\n", [message("1", type: "add"), message("2")]),
            Row("an event without data is not dispatched", "event: add\n\ndata: 2\n\n", [message("2")]),
            Row("id sets the last event id", "id: 7\ndata: a\n\n", [message("a", id: "7")], lastEventID: "7"),
            Row("the id carries over to later events", "id: 7\ndata: a\n\ndata: b\n\n",
                [message("a", id: "7"), message("b", id: "7")], lastEventID: "7"),
            Row("an empty id resets it", "id: 7\ndata: a\n\nid\ndata: b\n\n",
                [message("a", id: "7"), message("b")], lastEventID: ""),
            Row("an id with NUL is ignored", Array("id: 1\ndata: a\n\nid: x".utf8) + [0] + Array("y\ndata: b\n\n".utf8),
                [message("a", id: "1"), message("b", id: "1")], lastEventID: "1"),
            Row("an id-only event moves the id without an event", "id: 5\n\ndata: a\n\n", [message("a", id: "5")], lastEventID: "5"),
            Row("the last id field of an event wins", "id: 1\nid: 2\ndata: a\n\n", [message("a", id: "2")], lastEventID: "2"),
            Row("retry of digits is kept", "retry: 1500\n\n", [], retry: 1500),
            Row("retry with anything else is ignored", "retry: 15s\nretry: -1\nretry: 1.5\nretry:\n\n", []),
            Row("the last valid retry wins", "retry: 10\nretry: x\nretry: 20\n\n", [], retry: 20),
            Row("retry too large saturates", "retry: 99999999999999999999999\n\n", [], retry: Int.max),
            Row("a leading BOM is dropped", bom + Array("data: a\n\n".utf8), [message("a")]),
            Row("only one BOM is dropped", bom + bom + Array("data: a\n\ndata: b\n\n".utf8), [message("b")]),
            Row("a BOM later is data", Array("data: ".utf8) + bom + Array("\n\n".utf8), [message("\u{FEFF}")]),
            Row("an unfinished event at the end is discarded", "data: a\n\ndata: b\n", [message("a")]),
            Row("an unfinished line at the end is discarded", "data: a\n\ndata: b", [message("a")]),
            Row("a field name is case-sensitive", "Data: a\nEvent: x\n\n", []),
            Row("a colon in the value stays", "data: a: b\n\n", [message("a: b")]),
            Row("a space before the colon is part of the name", "data : a\n\n", []),
            Row("invalid UTF-8 becomes U+FFFD", Array("data: a".utf8) + [0xFF] + Array("b\n\n".utf8), [message("a\u{FFFD}b")]),
            Row("multi-byte text", "data: 日本語 🎉\n\n", [message("日本語 🎉")]),
            Row("blank lines between events dispatch nothing", "\n\n\ndata: a\n\n\n\n", [message("a")]),
            Row("CR then LF across events", "data: a\r\r\ndata: b\r\n\r\n", [message("a"), message("b")]),
        ]

        private func parse(_ chunks: [ArraySlice<UInt8>]) -> (events: [ServerSentEvent], parser: EventStreamParser) {
            var parser = EventStreamParser()
            var events: [ServerSentEvent] = []
            for chunk in chunks { events += parser.parse(chunk) }
            return (events, parser)
        }

        @Test(arguments: rows)
        func aRowGivesItsEventsHoweverItIsSplit(_ row: Row) {
            var splits: [[ArraySlice<UInt8>]] = [[row.stream[...]], row.stream.indices.map { row.stream[$0...$0] }]
            for cut in 0...row.stream.count {
                splits.append([row.stream[..<cut], row.stream[cut...]])
            }
            for chunks in splits {
                let (events, parser) = parse(chunks)
                #expect(events == row.events, "split into \(chunks.map(\.count))")
                #expect(parser.lastEventID == row.lastEventID, "split into \(chunks.map(\.count))")
                #expect(parser.reconnectionTime == row.retry, "split into \(chunks.map(\.count))")
            }
        }

        @Test func aNewStreamForgetsAnUnfinishedEventAndAnIdItNeverDispatched() throws {
            var parser = EventStreamParser()
            #expect(parser.parse(Array("id: 1\ndata: one\n\nid: 2\ndata: tw".utf8)) == [Self.message("one", id: "1")])
            parser.beginStream()
            // The cut-off event's id (2) is not the stream's: a reconnection sends 1.
            #expect(parser.lastEventID == "1")
            #expect(parser.parse(Array("o\n\ndata: three\n\n".utf8)) == [Self.message("three", id: "1")])
        }

        /// A pause held back events the parser had read (ids up to 40) and the reconnection
        /// asked after the last one delivered (10): the new body's events without an id are
        /// after 10, and a body cut before its first event leaves the id at 10, not at 40
        /// (which would make the next reconnection skip 11 to 40).
        @Test func aNewStreamStartsFromTheIdItsRequestNamed() throws {
            var parser = EventStreamParser(lastEventID: "9")
            _ = parser.parse(Array("id: 10\ndata: ten\n\nid: 40\ndata: forty\n\n".utf8))
            #expect(parser.lastEventID == "40")
            parser.beginStream(after: "10")
            #expect(parser.lastEventID == "10")
            #expect(parser.parse(Array("data: x\n\n".utf8)) == [Self.message("x", id: "10")])
        }

        @Test func aNewStreamMayStartWithItsOwnBOMAndAHalfCRLFIsForgotten() throws {
            var parser = EventStreamParser()
            #expect(parser.parse(Self.bom + Array("data: a\n\ndata: b\r".utf8)) == [Self.message("a")])
            parser.beginStream()
            // b, cut off, is discarded; the new body's own BOM is dropped.
            #expect(parser.parse(Self.bom + Array("data: c\n\n".utf8)) == [Self.message("c")])
        }

        @Test func aParserResumedFromAnIdCarriesItUntilAnotherArrives() throws {
            var parser = EventStreamParser(lastEventID: "41")
            #expect(parser.parse(Array("data: a\n\nid: 42\ndata: b\n\n".utf8))
                == [Self.message("a", id: "41"), Self.message("b", id: "42")])
        }

        @Test func theEventsBeforeOneTooLargeAreKept() {
            var parser = EventStreamParser(maximumEventBytes: 64)
            let chunk = "id: 1\ndata: a\n\ndata: \(String(repeating: "x", count: 100))\n\n"
            #expect(parser.parse(Array(chunk.utf8)) == [Self.message("a", id: "1")])
            #expect(parser.failure == EventStreamError(reason: .eventTooLarge(limit: 64)))
            #expect(parser.lastEventID == "1")
            #expect(parser.parse(Array("data: b\n\n".utf8)).isEmpty)
        }

        @Test func anEventPastTheLimitIsATypedError() {
            var parser = EventStreamParser(maximumEventBytes: 64)
            #expect(parser.parse(Array("data: \(String(repeating: "x", count: 50))\n\n".utf8)).count == 1)
            #expect(parser.failure == nil)
            // Many lines of one event, then one endless line: both are bounded.
            for stream in ["data: \(String(repeating: "x", count: 40))\n" + "data: \(String(repeating: "y", count: 40))\n",
                           ": " + String(repeating: "z", count: 100)] {
                var fresh = EventStreamParser(maximumEventBytes: 64)
                #expect(fresh.parse(Array(stream.utf8)).isEmpty)
                #expect(fresh.failure == EventStreamError(reason: .eventTooLarge(limit: 64)))
            }
        }
    }
}
