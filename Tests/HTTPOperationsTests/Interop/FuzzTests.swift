import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// Issue 15's fuzzing: a seeded mutator (``Mutator``) over the committed corpus
    /// (Tests/FuzzCorpus), or random structures where there is no text to mutate, against
    /// every parser and builder that meets outside input. Each target runs a bounded number of
    /// inputs (and at most 20 s) in every CI run; `HTTPOPERATIONS_FUZZ_ITERATIONS` runs more
    /// locally, `HTTPOPERATIONS_SEED` replays a printed seed.
    @Suite struct Fuzzing {
        /// Inputs per target: 5,000 in the plain build, 500 under a sanitizer.
        static var iterations: Int {
            if let count = ProcessInfo.processInfo.environment["HTTPOPERATIONS_FUZZ_ITERATIONS"].flatMap(Int.init) { return count }
            #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
            return 500
            #else
            return 5_000
            #endif
        }

        /// Runs `body` on up to ``iterations`` inputs from a seeded mutator over `target`'s
        /// corpus, for at most 20 s; records the seed and the input of the first failure.
        static func fuzz(_ target: String, _ body: (Data) -> String?) throws {
            let corpus = fuzzCorpus(target)
            try #require(!corpus.isEmpty, "no corpus in Tests/FuzzCorpus/\(target)")
            let seed = SeededGenerator(for: "fuzz \(target)").seed
            var mutator = Mutator(seed: seed, corpus: corpus)
            let deadline = ContinuousClock.now + .seconds(20)
            var ran = 0
            // The corpus itself first, then mutants.
            while ran < iterations + corpus.count, ContinuousClock.now < deadline {
                let input = ran < corpus.count ? corpus[ran] : mutator.next()
                ran += 1
                // When a crash ends the process there is no issue to record: this file keeps the
                // input that was running (HTTPOPERATIONS_FUZZ_LAST=<path>).
                if let path = ProcessInfo.processInfo.environment["HTTPOPERATIONS_FUZZ_LAST"] {
                    try? input.write(to: URL(fileURLWithPath: "\(path).\(target)"))
                }
                if let failure = body(input) {
                    Issue.record("fuzz \(target) (seed \(seed)), input \(ran): \(failure); input base64 \(input.base64EncodedString())")
                    return
                }
            }
            print("fuzz \(target): \(ran) inputs (seed \(seed))")
        }

        @Test func responseHeadParser() throws {
            try Self.fuzz("head") { input in
                // curl hands over one line per callback, each with its line ending.
                var lines: [Data] = []
                var start = input.startIndex
                for index in input.indices where input[index] == UInt8(ascii: "\n") {
                    lines.append(input[start...index])
                    start = index + 1
                }
                if start < input.endIndex { lines.append(input[start...]) }
                func parse() -> [ResponseHead] {
                    var parser = ResponseHeadParser()
                    return lines.compactMap { line in line.withUnsafeBytes { parser.consume(line: $0) } }
                }
                let heads = parse()
                guard heads == parse() else { return "the same lines parsed twice gave different heads" }
                for head in heads {
                    guard head.statusCode >= 0, head.statusCode < 1_000_000_000 else { return "status code \(head.statusCode)" }
                    guard head.fields.count <= lines.count else { return "more fields than lines" }
                    for (name, _) in head.fields where name.contains(":") {
                        return "a field name with a colon: \(name)"
                    }
                    // What the state machine makes of it: never a status outside HTTP's three
                    // digits, and never one outside 2xx into the bytes held (issue 26: an
                    // unknown three-digit status is an error answer, held aside).
                    var machine = TransferStateMachine(configuration: .init(), validator: nil, knownLength: nil)
                    _ = machine.begin(held: 0)
                    let action = head.isInterim ? nil : machine.headReceived(head)
                    if let action, !(100...999).contains(head.statusCode), action != .abort {
                        return "status \(head.statusCode) accepted"
                    }
                    if let action, !(200...299).contains(head.statusCode), case .deliver = action {
                        return "status \(head.statusCode) delivered into the bytes held"
                    }
                }
                return nil
            }
        }

        @Test func contentRangeParser() throws {
            try Self.fuzz("content-range") { input in
                let text = String(decoding: input, as: UTF8.self)
                guard let range = ContentRange(text) else { return nil }
                guard range.first >= 0, range.first <= range.last else { return "\(text) gave \(range)" }
                if let complete = range.completeLength, complete <= range.last { return "\(text) gave \(range)" }
                let canonical = "bytes \(range.first)-\(range.last)/\(range.completeLength.map(String.init) ?? "*")"
                guard ContentRange(canonical) == range else { return "\(text) gave \(range), which does not read back" }
                return nil
            }
        }

        /// Every response serializer, on mutated bodies of its own kind: an object, or one of
        /// the library's typed errors — never a crash, never Foundation's error unwrapped.
        @Test(arguments: [
            ("json", "application/json"), ("xml", "application/xml"), ("plist", "application/x-plist"),
            ("image", "image/png"), ("text", "text/plain"),
        ])
        func responseSerializers(_ target: String, _ contentType: String) throws {
            let url = URL(string: "http://fuzz.test/")!
            let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                                           headerFields: ["Content-Type": contentType])
            let serializers: [(String, any URLResponseSerialization)] = [
                ("HTTPResponseSerializer", HTTPResponseSerializer()),
                ("JSONResponseSerializer", JSONResponseSerializer()),
                ("XMLParserResponseSerializer", XMLParserResponseSerializer()),
                ("XMLDocumentResponseSerializer", XMLDocumentResponseSerializer()),
                ("PropertyListResponseSerializer", PropertyListResponseSerializer()),
                ("ImageResponseSerializer", ImageResponseSerializer()),
                ("DecodableResponseSerializer<[String: Int]>", DecodableResponseSerializer<[String: Int]>()),
                ("CompoundResponseSerializer", CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer(),
                                                                           PropertyListResponseSerializer(), ImageResponseSerializer()])),
            ]
            try Self.fuzz(target) { input in
                for (name, serializer) in serializers {
                    do {
                        _ = try serializer.responseObject(for: response, data: input)
                    } catch is ResponseSerializationError, is ResponseValidationError {
                        continue
                    } catch {
                        return "\(name) threw an untyped \(type(of: error)): \(error)"
                    }
                }
                return nil
            }
        }

        /// Random nested parameters: the query string decodes back to exactly the pairs put
        /// in, and nothing but unreserved characters, `/`, `?` and escapes appears in a pair.
        @Test func queryStringBuilder() throws {
            var generator = SeededGenerator(for: "fuzz query string")
            let seed = generator.seed
            let literal = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/?%")
            for round in 0..<Self.iterations {
                let parameters = Self.randomDictionary(&generator, depth: 0)
                let query = QueryString.make(from: parameters)
                let expected = QueryString.pairs(key: nil, value: parameters)
                // A key "" with a null value is written as nothing at all (as AFNetworking did):
                // split keeps empty pieces, so `{"": null}` is the one pair "".
                let encoded = expected.isEmpty ? [] : query.split(separator: "&", omittingEmptySubsequences: false)
                guard encoded.count == expected.count else {
                    Issue.record("round \(round) (seed \(seed)): \(encoded.count) pairs for \(expected.count): \(query)")
                    return
                }
                for (text, pair) in zip(encoded, expected) {
                    let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    let field = parts[0].removingPercentEncoding
                    let value = parts.count > 1 ? parts[1].removingPercentEncoding : nil
                    let wantValue = pair.value.flatMap { $0 is NSNull ? nil : QueryString.describe($0) }
                    let onlyLiteral = parts.allSatisfy { $0.unicodeScalars.allSatisfy(literal.contains) }
                    if field != pair.field || value != wantValue || !onlyLiteral {
                        Issue.record("round \(round) (seed \(seed)): \(text) is not \(pair.field)=\(wantValue ?? "nil")")
                        return
                    }
                }
            }
        }

        /// Random parts, names and bodies (binary, and names with quotes and line breaks): the
        /// streamed body is as long as it says, splits into exactly the parts put in, and no
        /// name breaks out of its quoted header parameter.
        @Test func multipartBuilder() throws {
            var generator = SeededGenerator(for: "fuzz multipart")
            let seed = generator.seed
            for round in 0..<Self.iterations / 10 {
                let form = MultipartFormData()
                var bodies: [Data] = []
                for _ in 0..<Int.random(in: 0...5, using: &generator) {
                    let body = Data((0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
                    let name = Self.randomString(&generator)
                    if Bool.random(using: &generator) {
                        form.appendPart(formData: body, name: name)
                    } else {
                        form.appendPart(fileData: body, name: name, fileName: Self.randomString(&generator), mimeType: "application/octet-stream")
                    }
                    bodies.append(body)
                }
                let stream = MultipartBodyStream(form)
                stream.open()
                var streamed = Data()
                var buffer = [UInt8](repeating: 0, count: Int.random(in: 1...512, using: &generator))
                while true {
                    let count = stream.read(&buffer, maxLength: buffer.count)
                    if count <= 0 { break }
                    streamed.append(contentsOf: buffer[0..<count])
                }
                stream.close()
                let failure: String? = {
                    guard Int64(streamed.count) == stream.contentLength else { return "\(streamed.count) bytes, \(stream.contentLength) announced" }
                    let delimiter = Data("--\(form.boundary)".utf8)
                    var pieces: [Data] = []
                    var rest = streamed[...]
                    while let found = rest.range(of: delimiter) {
                        pieces.append(Data(rest[..<found.lowerBound]))
                        rest = rest[found.upperBound...]
                    }
                    // Before the first delimiter: nothing; after the last: "--\r\n".
                    guard pieces.first?.isEmpty ?? bodies.isEmpty, Data(rest) == Data("--\r\n".utf8) else { return "framing" }
                    let parts = pieces.dropFirst()
                    guard parts.count == bodies.count else { return "\(parts.count) parts for \(bodies.count)" }
                    for (part, body) in zip(parts, bodies) {
                        guard let split = part.range(of: Data("\r\n\r\n".utf8)) else { return "a part without a head" }
                        let head = String(decoding: part[..<split.lowerBound], as: UTF8.self)
                        var content = Data(part[split.upperBound...])
                        if content.suffix(2) == Data("\r\n".utf8) { content.removeLast(2) }
                        guard content == body else { return "a part's body changed" }
                        // The head is "\r\n" then one line per field: a name never adds a line.
                        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: true)
                        guard lines.count == (head.contains("filename=") ? 2 : 1) else { return "a name broke the head: \(head.debugDescription)" }
                        for line in lines where line.hasPrefix("Content-Disposition") {
                            // Exactly the quotes around name (and filename).
                            let quotes = line.filter { $0 == "\"" }.count
                            guard quotes == (line.contains("filename=") ? 4 : 2) else { return "a quote broke out: \(line)" }
                        }
                    }
                    return nil
                }()
                if let failure {
                    Issue.record("round \(round) (seed \(seed)): \(failure)")
                    return
                }
            }
        }

        // MARK: - Random structures

        static func randomString(_ generator: inout SeededGenerator) -> String {
            let alphabet: [Character] = ["a", "Z", "0", " ", "&", "=", "?", "/", "#", "%", "+", "[", "]", "\"", "\r", "\n",
                                         ";", "é", "✓", "😀", "👩‍👩‍👧", "\u{0}", "~", "."]
            return String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }

        static func randomValue(_ generator: inout SeededGenerator, depth: Int) -> Any {
            switch Int.random(in: 0..<(depth < 3 ? 8 : 5), using: &generator) {
            case 0: return randomString(&generator)
            case 1: return Int.random(in: -1000...1000, using: &generator)
            case 2: return Bool.random(using: &generator)
            case 3: return NSNull()
            case 4: return Double(Int.random(in: -100...100, using: &generator)) / 8
            case 5: return (0..<Int.random(in: 0...3, using: &generator)).map { _ in randomValue(&generator, depth: depth + 1) }
            case 6: return Set((0..<Int.random(in: 0...3, using: &generator)).map { _ in randomString(&generator) })
            default: return randomDictionary(&generator, depth: depth + 1)
            }
        }

        static func randomDictionary(_ generator: inout SeededGenerator, depth: Int) -> [String: Any] {
            var dictionary: [String: Any] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                dictionary[randomString(&generator)] = randomValue(&generator, depth: depth)
            }
            return dictionary
        }
    }
}
