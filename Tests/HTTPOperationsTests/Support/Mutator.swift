import Foundation

/// A seeded mutational fuzzer in the manner of libFuzzer's mutators, small enough to read:
/// it takes an input from a corpus and applies one to four random edits — flip a bit, set a
/// byte, insert or delete a run, duplicate a run, splice in a piece of another input, insert
/// a token that parsers of HTTP, JSON and XML care about.
///
/// The same seed gives the same inputs, so a failure prints its seed and replays with
/// `HTTPOPERATIONS_SEED`.
struct Mutator {
    private var generator: SeededGenerator
    private let corpus: [[UInt8]]

    /// Bytes that change how a parser reads what follows.
    private static let tokens: [[UInt8]] = [
        "\r\n", "\r\n\r\n", "\n", "\r", ":", " ", "\t", "\0", "-", "/", "*", ",", ";", "=", "\"", "\\",
        "99999999999999999999", "-1", "0", "9223372036854775807", "HTTP/1.1 ", "HTTP/2 ", "bytes ",
        "<", ">", "</", "<!--", "]]>", "&amp;", "&#0;", "&bogus;", "{", "}", "[", "]", "\"\\u0000\"",
        "\\ud800", "1e999", "NaN", "null", "%", "%00", "\u{FEFF}", "\u{FFFD}",
    ].map { Array($0.utf8) } + [[0xFF], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98]]

    init(seed: UInt64, corpus: [Data]) {
        generator = SeededGenerator(seed: seed)
        self.corpus = corpus.map { [UInt8]($0) }
    }

    /// The next input: a corpus entry with one to four random edits.
    mutating func next() -> Data {
        var bytes = corpus.isEmpty ? [] : corpus[Int.random(in: 0..<corpus.count, using: &generator)]
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            mutate(&bytes)
        }
        return Data(bytes)
    }

    /// A random index into `count` positions (0 when there are none).
    private mutating func position(in count: Int) -> Int {
        count == 0 ? 0 : Int.random(in: 0..<count, using: &generator)
    }

    private mutating func mutate(_ bytes: inout [UInt8]) {
        switch Int.random(in: 0..<7, using: &generator) {
        case 0 where !bytes.isEmpty:
            let index = position(in: bytes.count)
            bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
        case 1 where !bytes.isEmpty:
            bytes[position(in: bytes.count)] = UInt8.random(in: 0...255, using: &generator)
        case 2:
            let run = (0..<Int.random(in: 1...16, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            bytes.insert(contentsOf: run, at: position(in: bytes.count + 1))
        case 3 where !bytes.isEmpty:
            let start = position(in: bytes.count)
            let end = min(bytes.count, start + Int.random(in: 1...32, using: &generator))
            bytes.removeSubrange(start..<end)
        case 4 where !bytes.isEmpty:
            let start = position(in: bytes.count)
            let end = min(bytes.count, start + Int.random(in: 1...64, using: &generator))
            bytes.insert(contentsOf: bytes[start..<end], at: position(in: bytes.count + 1))
        case 5 where !corpus.isEmpty:
            let other = corpus[position(in: corpus.count)]
            guard !other.isEmpty else { return }
            let start = position(in: other.count)
            let end = min(other.count, start + Int.random(in: 1...64, using: &generator))
            bytes.insert(contentsOf: other[start..<end], at: position(in: bytes.count + 1))
        default:
            let token = Self.tokens[position(in: Self.tokens.count)]
            bytes.insert(contentsOf: token, at: position(in: bytes.count + 1))
        }
    }
}

/// The committed corpus for `target` (`Tests/FuzzCorpus/<target>/*`), in name order.
func fuzzCorpus(_ target: String) -> [Data] {
    // Found from this file (Tests/HTTPOperationsTests/Support/), wherever the caller's file is.
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("FuzzCorpus").appendingPathComponent(target)
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    return names.sorted().compactMap { try? Data(contentsOf: folder.appendingPathComponent($0)) }
}
