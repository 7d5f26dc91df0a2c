import Foundation
import HTTPOperations
import HTTPTestServer
import Testing

/// One fault the ``FaultServer`` can play, as a row of the fault matrix. Its path on the server
/// is `/fault/<rawValue>`, so nginx can put HTTP/2 in front of the same fault.
enum Fault: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case finBeforeHead, rstBeforeHead
    case finMidBody, rstMidBody
    case finBeforeLastByte, rstBeforeLastByte
    case garbageInsteadOfHTTP, malformedStatusLine
    case chunkSizeNotHex, chunkWithoutCRLF, chunkShorterThanDeclared, chunksWithoutLastChunk, chunkSizeOverflow
    case badGzip, badBrotli, badZstd
    case redirectLoop
    case megabyteOfHeaders, headersDrippedOneBytePerSecond
    case bodyThatNeverEnds, acceptsAndNeverAnswers
    case largerThanMaximumBodySize
    case contentLengthShorterThanBody, contentLengthLongerThanBody
    case informationalStorm

    var testDescription: String { rawValue }

    /// The body every fault serves (or starts to): pattern bytes, so a prefix is checkable.
    static let bodySize = 64 * 1024
    static let body = TestServer.pattern(count: bodySize)
    /// The ``largerThanMaximumBodySize`` body, and the limit set on every operation.
    static let largeBodySize = 2 << 20
    static let maximumBodySize: Int64 = 1 << 20
    /// The ``contentLengthShorterThanBody`` announced length.
    static let shortContentLength = 1000

    /// What the server does for this fault, over HTTP/1.1.
    var steps: [FaultStep] {
        let body = [UInt8](Self.body)
        let half = Array(body.prefix(body.count / 2)), allButLast = Array(body.dropLast())
        switch self {
        case .finBeforeHead: return [.closeWithFIN]
        case .rstBeforeHead: return [.closeWithRST]
        case .finMidBody: return [.send(Self.head(length: body.count) + half), .closeWithFIN]
        case .rstMidBody: return [.send(Self.head(length: body.count) + half), .closeWithRST]
        case .finBeforeLastByte: return [.send(Self.head(length: body.count) + allButLast), .closeWithFIN]
        case .rstBeforeLastByte: return [.send(Self.head(length: body.count) + allButLast), .closeWithRST]
        case .garbageInsteadOfHTTP:
            var generator = SeededGenerator(seed: 0xFA17)
            // Never starts like "HTTP/": the first byte is 0x00.
            return [.send([0] + (0..<4095).map { _ in UInt8.random(in: 0...255, using: &generator) }), .closeWithFIN]
        case .malformedStatusLine:
            return [.send(Array("HTTP/1.1 2x0 OK\r\nContent-Length: 5\r\n\r\nhello".utf8)), .closeWithFIN]
        case .chunkSizeNotHex:
            return [.send(Self.chunkedHead + Self.chunk(half) + Array("zz\r\n".utf8) + half), .closeWithFIN]
        case .chunkWithoutCRLF:
            return [.send(Self.chunkedHead + Array("\(String(half.count, radix: 16))\r\n".utf8) + half + Self.chunk(half)), .closeWithFIN]
        case .chunkShorterThanDeclared:
            return [.send(Self.chunkedHead + Array("\(String(body.count, radix: 16))\r\n".utf8) + half), .closeWithFIN]
        case .chunksWithoutLastChunk:
            return [.send(Self.chunkedHead + Self.chunk(half)), .closeWithFIN]
        case .chunkSizeOverflow:
            return [.send(Self.chunkedHead + Array("fffffffffffffffffff\r\n".utf8) + half), .closeWithFIN]
        case .badGzip: return [.send(Self.head(length: body.count, extra: "Content-Encoding: gzip\r\n") + body), .closeWithFIN]
        case .badBrotli: return [.send(Self.head(length: body.count, extra: "Content-Encoding: br\r\n") + body), .closeWithFIN]
        case .badZstd: return [.send(Self.head(length: body.count, extra: "Content-Encoding: zstd\r\n") + body), .closeWithFIN]
        case .redirectLoop:
            return [.send(Array("HTTP/1.1 302 Found\r\nLocation: /fault/redirectLoop\r\nContent-Length: 0\r\n\r\n".utf8)), .closeWithFIN]
        case .megabyteOfHeaders:
            let line = "X-Filler: " + String(repeating: "a", count: 1000) + "\r\n"
            let headers = String(repeating: line, count: 1 << 10)
            return [.send(Self.head(length: body.count, extra: headers) + body), .closeWithFIN]
        case .headersDrippedOneBytePerSecond:
            return [.drip(Self.head(length: body.count), interval: .seconds(1))]
        case .bodyThatNeverEnds:
            // 1 KiB of the pattern every 10 ms, continuing where the last chunk ended.
            return [.send(Self.chunkedHead), .sendForever(chunk: { Self.chunk([UInt8](TestServer.pattern(offset: $0 * 1024, count: 1024))) },
                                                          interval: .milliseconds(10))]
        case .acceptsAndNeverAnswers: return [.hang]
        case .largerThanMaximumBodySize:
            let large = [UInt8](TestServer.pattern(count: Self.largeBodySize))
            return [.send(Self.head(length: large.count) + large), .closeWithFIN]
        case .contentLengthShorterThanBody: return [.send(Self.head(length: Self.shortContentLength) + body), .closeWithFIN]
        case .contentLengthLongerThanBody: return [.send(Self.head(length: body.count * 2) + body), .hang]
        case .informationalStorm: return [.send(Self.thousandEarlyHints + Self.head(length: body.count) + body), .closeWithFIN]
        }
    }

    /// 1,000 interim `103 Early Hints` heads, built once with bulk copies. They used to be
    /// joined per request from 1,000 arrays, 61,000 generic element steps: under
    /// ThreadSanitizer that took 0.06–0.4 s per build in the test process, and a packet
    /// capture of CI's failing informationalStorm cells showed the server answering 1.5 s to
    /// over 4 s after the request, past the client's idle timeout. Built once: every storm cell
    /// passes under TSan, in 0.17–0.79 s.
    private static let thousandEarlyHints =
        Array(String(repeating: "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n", count: 1000).utf8)

    private static func head(length: Int, extra: String = "") -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(length)\r\n\(extra)\r\n".utf8)
    }

    private static let chunkedHead = Array("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)

    private static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        Array("\(String(bytes.count, radix: 16))\r\n".utf8) + bytes + [13, 10]
    }

    /// The script the shared fault server plays for `path`.
    static func script(for path: String) -> [FaultStep] {
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        return Fault(rawValue: name)?.steps ?? [.send(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8))]
    }
}

/// The one fault server of the test run, started on first use (nginx proxies `/fault/` to it).
let faultServer: FaultServer = {
    do {
        return try FaultServer.start(script: Fault.script(for:))
    } catch {
        fatalError("the fault server did not start: \(error)")
    }
}()
