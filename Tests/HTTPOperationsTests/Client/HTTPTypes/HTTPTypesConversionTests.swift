import Foundation
import HTTPTypes
import HTTPTypesFoundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// The HTTPTypes door's own conversions, made for their cost (issue 26): each is held to
    /// what swift-http-types makes, over seeded random requests and heads. No I/O.
    @Suite struct HTTPTypesConversion {
        static let scenarios = 3_000

        /// `URLRequest(sending:)` makes what `URLRequest(httpRequest:)` makes: the same URL,
        /// method and header fields, for every method (an extended CONNECT too), repeated
        /// fields and cookies, values that are not ASCII, targets that are not UTF-8 or not a
        /// URL's characters, and requests that name no URL (an OPTIONS of `*`, no authority,
        /// no path).
        @Test func itMakesWhatTheLibraryMakes() throws {
            var random = SeededGenerator(for: "URLRequest(sending:)")
            var differences: [String] = []
            for scenario in 0..<Self.scenarios {
                let request = Self.randomRequest(&random)
                let ours = URLRequest(sending: request)
                let library = URLRequest(httpRequest: request)
                let same = ours?.url == library?.url && ours?.httpMethod == library?.httpMethod
                    && ours?.allHTTPHeaderFields == library?.allHTTPHeaderFields
                    && (ours == nil) == (library == nil)
                if !same {
                    differences.append("scenario \(scenario): \(request) -> ours \(Self.describe(ours)), library \(Self.describe(library))")
                }
            }
            #expect(differences.isEmpty, "seed \(random.seed), \(differences.count) of \(Self.scenarios) differ; first: \(differences.prefix(3))")
        }

        /// Fields read from a head are the library's own reading of the bytes received
        /// (`HTTPField(name:lenientValue:)` with the name made from its spelling): names keep
        /// their spelling, a common name (found in ``CommonFieldNames``) as any other, and
        /// values their bytes, whatever they hold (spaces and tabs, controls, bytes that are
        /// not ASCII or not UTF-8).
        @Test func fieldNamesKeepTheirSpelling() throws {
            var random = SeededGenerator(for: "ResponseHead.httpFields")
            let spellings = ["Content-Type", "content-type", "CONTENT-TYPE", "ETag", "Etag", "etag", "Date", "Server",
                             "Set-Cookie", "set-cookie", "X-Request-Id", "x-custom", "Content-Length", "WWW-Authenticate",
                             "Www-Authenticate", "Vary", "vary", "Bad Name"]
            let pieces: [[UInt8]] = [Array("v1".utf8), Array("text/html; charset=utf-8".utf8), [0x20], [0x09], [0x01], [0x7F],
                                     [0xE9], [0xC3, 0xA9], Array("\"q\"".utf8), [0x00]]
            var wrong: [String] = []
            var fieldsRead = 0
            for _ in 0..<Self.scenarios {
                var parser = ResponseHeadParser()
                var lines = [Array("HTTP/1.1 200 OK\r\n".utf8)]
                for _ in 0..<Int.random(in: 0...8, using: &random) {
                    let value = (0..<Int.random(in: 0...4, using: &random)).flatMap { _ in pieces.randomElement(using: &random)! }
                    lines.append(Array(spellings.randomElement(using: &random)!.utf8) + Array(": ".utf8) + value + Array("\r\n".utf8))
                    if Int.random(in: 0..<4, using: &random) == 0 {
                        // A folded continuation (obs-fold): the one way a value keeps a space or
                        // tab at an end once the parser has trimmed it.
                        let fold = (0..<Int.random(in: 0...2, using: &random)).flatMap { _ in pieces.randomElement(using: &random)! }
                        lines.append([Bool.random(using: &random) ? 0x20 : 0x09] + fold + Array("\r\n".utf8))
                    }
                }
                lines.append(Array("\r\n".utf8))
                var head: ResponseHead?
                for line in lines { head = line.withUnsafeBytes { parser.consume(line: $0) } ?? head }
                guard let head else {
                    wrong.append("no head from \(lines)")
                    continue
                }
                var expected: [HTTPField] = []
                head.forEachField { name, value in
                    guard let name = HTTPField.Name(String(decoding: name, as: UTF8.self)) else { return }
                    expected.append(HTTPField(name: name, lenientValue: value))
                }
                let read = Array(head.httpFields)
                fieldsRead += read.count
                guard read.count == expected.count else {
                    wrong.append("\(expected.count) fields, \(read.count) read")
                    continue
                }
                for (field, library) in zip(read, expected)
                where field.name.rawName != library.name.rawName || field.name != library.name || field.value != library.value
                    || field.withUnsafeBytesOfValue({ Array($0) }) != library.withUnsafeBytesOfValue({ Array($0) }) {
                    wrong.append("\(library) read as \(field)")
                }
            }
            #expect(fieldsRead > Self.scenarios, "too few fields to prove anything: \(fieldsRead)")
            #expect(wrong.isEmpty, "seed \(random.seed): \(wrong.count) fields read wrong; first: \(wrong.prefix(3))")
        }

        /// A request the conversions may meet: any method, a URL or only a path, fields
        /// repeated, cookies, and values with bytes that are not ASCII.
        static func randomRequest(_ random: inout SeededGenerator) -> HTTPRequest {
            let methods: [HTTPRequest.Method] = [.get, .get, .get, .head, .post, .put, .delete, .patch, .options, .trace,
                                                 .connect, HTTPRequest.Method("PURGE")!]
            let authorities = ["example.com", "127.0.0.1:8080", "[::1]:8443", "h.example:80"]
            let segments = ["a", "b%20c", "caf%C3%A9", "", "~user", "x.json", "%2F"]
            let queries = ["", "?q=1", "?a=b&c=%2F", "?"]
            let path = "/" + (0..<Int.random(in: 0...3, using: &random)).map { _ in segments.randomElement(using: &random)! }
                .joined(separator: "/") + queries.randomElement(using: &random)!
            let method = methods.randomElement(using: &random)!
            var request = HTTPRequest(method: method, scheme: Bool.random(using: &random) ? "https" : "http",
                                      authority: authorities.randomElement(using: &random)!, path: path)
            switch Int.random(in: 0..<16, using: &random) {
            case 0: request.scheme = nil; request.authority = nil  // a path alone: no URL
            case 1 where method == .connect: request.extendedConnectProtocol = "websocket"
            case 2: request.path = "*"  // an OPTIONS of the server names no URL
            case 3: request.authority = nil
            case 4: request.path = nil
            case 5: request.path = "/a b|c"  // not a URL's characters
            case 6:
                // Bytes that are not UTF-8 in the path or the authority: repaired alike.
                let bad = [UInt8(ascii: "/"), 0xC3, UInt8.random(in: 0x80...0xFF, using: &random), 0x2F, 0xE9]
                // (The pseudo-header fields' names are the library's own: taken from the fields.)
                if Bool.random(using: &random), let path = request.pseudoHeaderFields.path {
                    request.pseudoHeaderFields.path = HTTPField(name: path.name, lenientValue: bad)
                } else if let authority = request.pseudoHeaderFields.authority {
                    request.pseudoHeaderFields.authority = HTTPField(name: authority.name, lenientValue: Array("h".utf8) + bad.dropFirst())
                }
            default: break
            }
            let names = ["Cookie", "X-Multi", "x-multi", "Accept", "Content-Type", "X-Latin"].compactMap { HTTPField.Name($0) }
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                var value = Array("v\(Int.random(in: 0...99, using: &random))".utf8)
                if Int.random(in: 0..<4, using: &random) == 0 { value.append(UInt8.random(in: 0x80...0xFF, using: &random)) }
                request.headerFields.append(HTTPField(name: names.randomElement(using: &random)!, lenientValue: value))
            }
            return request
        }

        static func describe(_ request: URLRequest?) -> String {
            guard let request else { return "nil" }
            return "\(request.httpMethod ?? "-") \(request.url?.absoluteString ?? "-") \(request.allHTTPHeaderFields ?? [:])"
        }
    }
}
