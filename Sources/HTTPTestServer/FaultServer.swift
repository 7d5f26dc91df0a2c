import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One thing a ``FaultServer`` does on a connection, in the order its script lists them.
public enum FaultStep: Sendable {
    /// Writes these bytes at once.
    case send([UInt8])
    /// Writes these bytes one at a time, waiting `interval` before each.
    case drip([UInt8], interval: Duration)
    /// Says nothing for `duration` (a server that streams events as they happen).
    case wait(Duration)
    /// Runs `action` on the connection's thread and goes on when it returns: a test's gate
    /// (a semaphore the client side signals).
    case run(@Sendable () -> Void)
    /// Writes `chunk(n)` for n = 0, 1, 2, … every `interval` until the peer goes away: a body
    /// that never ends.
    case sendForever(chunk: @Sendable (Int) -> [UInt8], interval: Duration)
    /// Reads the next request head on the same connection (a client that reused it) and goes
    /// on; closes when the peer closes first. Its body, if any, is left unread.
    case readNextRequest
    /// Reads the next request on the same connection, its `Content-Length` body included,
    /// and goes on with the steps `script` gives for it: a kept-alive connection scripted
    /// request by request. Closes when the peer closes first.
    case answerNextRequest(@Sendable (FaultRequest) -> [FaultStep])
    /// Reads and drops the `Content-Length` body of the connection's first request (the
    /// requests ``answerNextRequest(_:)`` reads come with theirs read).
    case discardFirstRequestBody
    /// Closes the connection normally (FIN).
    case closeWithFIN
    /// Closes the connection with a reset (RST): `SO_LINGER` zero, then close.
    case closeWithRST
    /// Says nothing more and keeps the connection open until the peer closes it.
    case hang
    /// Says nothing more and reads nothing more, until the peer closes: what the peer sends
    /// fills the socket buffers, and its writes block (a server that stopped reading).
    case stopReading
}

/// A raw TCP server on a loopback port that answers every request with a scripted sequence
/// of bytes, pauses and closes: the faults no well-behaved HTTP server produces, which a
/// client must survive (garbage instead of HTTP, broken chunked framing, a reset at the last
/// byte, headers dripped a byte per second).
///
/// It reads the request head (up to the blank line), hands its path to `script`, and plays
/// the steps. A script that does not close ends with a FIN. Each connection runs on its own
/// thread with blocking sockets: this is test equipment, where plain code beats efficiency,
/// and a connection that hangs costs one parked thread until the client gives up.
public final class FaultServer: Sendable {
    /// The loopback port the server listens on.
    public let port: Int
    private let listener: Int32
    private let script: @Sendable (FaultRequest) -> [FaultStep]

    /// Starts a server on 127.0.0.1 and a port the kernel picks. `script` maps a request's
    /// path (with its query) to what the server does.
    public static func start(script: @escaping @Sendable (String) -> [FaultStep]) throws -> FaultServer {
        try startWithHeads { request in script(request.path) }
    }

    /// Starts a server whose script sees each connection's first request head: its path and
    /// header fields (what a `Range` or `If-Range` asked).
    public static func startWithHeads(_ script: @escaping @Sendable (FaultRequest) -> [FaultStep]) throws -> FaultServer {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw FaultServerError("socket: errno \(errno)") }
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 512) == 0 else {
            close(listener)
            throw FaultServerError("bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let server = FaultServer(port: Int(UInt16(bigEndian: address.sin_port)), listener: listener, script: script)
        let thread = Thread { server.acceptForever() }
        thread.name = "FaultServer accept"
        thread.start()
        return server
    }

    private init(port: Int, listener: Int32, script: @escaping @Sendable (FaultRequest) -> [FaultStep]) {
        self.port = port
        self.listener = listener
        self.script = script
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private func acceptForever() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let thread = Thread { [self] in serve(connection) }
            thread.name = "FaultServer connection"
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        var open = true
        defer { if open { close(connection) } }
        guard let request = readRequest(connection) else { return }
        var steps = script(request)[...]
        while let step = steps.popFirst() {
            switch step {
            case .send(let bytes):
                guard write(bytes, to: connection) else { return }
            case .drip(let bytes, let interval):
                for byte in bytes {
                    Thread.sleep(forTimeInterval: interval.seconds)
                    guard write([byte], to: connection) else { return }
                }
            case .wait(let duration):
                Thread.sleep(forTimeInterval: duration.seconds)
            case .run(let action):
                action()
            case .sendForever(let chunk, let interval):
                var index = 0
                while write(chunk(index), to: connection) {
                    index += 1
                    Thread.sleep(forTimeInterval: interval.seconds)
                }
                return
            case .readNextRequest:
                guard readRequest(connection) != nil else { return }
            case .discardFirstRequestBody:
                guard readBody(of: request, from: connection) else { return }
            case .answerNextRequest(let next):
                guard let request = readRequest(connection), readBody(of: request, from: connection) else { return }
                steps = next(request)[...]
            case .closeWithFIN:
                return
            case .closeWithRST:
                var noLinger = linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &noLinger, socklen_t(MemoryLayout<linger>.size))
                close(connection)
                open = false
                return
            case .hang:
                // Blocks until the peer closes (0) or resets (-1); whatever it sends is dropped.
                var sink = [UInt8](repeating: 0, count: 4096)
                while recv(connection, &sink, sink.count, 0) > 0 {}
                return
            case .stopReading:
                // Woken by the peer's close only: POLLIN is not asked for, so data is left unread.
                // POLLRDHUP is 0x2000 on Linux; Glibc hides its name behind _GNU_SOURCE.
                var watch = pollfd(fd: connection, events: 0x2000, revents: 0)
                while poll(&watch, 1, -1) < 0, errno == EINTR {}
                return
            }
        }
    }

    /// The request head read from `connection`, or nil when the peer went first.
    private func readRequest(_ connection: Int32) -> FaultRequest? {
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let blankLine: [UInt8] = [13, 10, 13, 10]
        while !head.ends(with: blankLine) {
            // One byte at a time, so that nothing after the head (a body) is taken as head.
            let count = recv(connection, &buffer, 1, 0)
            guard count > 0 else { return nil }
            head.append(buffer[0])
            if head.count > 64 * 1024 { return nil }
        }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2 else { return nil }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased(), default: ""] += line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return FaultRequest(method: String(parts[0]), path: String(parts[1]), fields: fields)
    }

    /// Reads and drops the `Content-Length` bytes of `request`'s body; false when the peer
    /// went first.
    private func readBody(of request: FaultRequest, from connection: Int32) -> Bool {
        var left = request.field("Content-Length").flatMap { Int($0) } ?? 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while left > 0 {
            let count = recv(connection, &buffer, min(left, buffer.count), 0)
            guard count > 0 else { return false }
            left -= count
        }
        return true
    }

    /// Writes all of `bytes`; false once the peer has gone.
    private func write(_ bytes: [UInt8], to connection: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}

/// A request head as a ``FaultServer`` script sees it.
public struct FaultRequest: Sendable {
    /// The method.
    public let method: String
    /// The request target: the path with its query.
    public let path: String
    /// The header fields by lower-case name (repeated ones run together).
    public let fields: [String: String]

    /// The value of the field `name` (any case), if sent.
    public func field(_ name: String) -> String? { fields[name.lowercased()] }
}

/// Why a ``FaultServer`` did not start.
public struct FaultServerError: Error, CustomStringConvertible {
    /// What failed.
    public let description: String
    init(_ description: String) { self.description = description }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

private extension Duration {
    var seconds: TimeInterval {
        let (whole, fraction) = components
        return TimeInterval(whole) + TimeInterval(fraction) / 1e18
    }
}
