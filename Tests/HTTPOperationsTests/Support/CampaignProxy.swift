import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP proxy on a loopback port, for the resume campaign: `CONNECT host:port` opens a
/// tunnel (`HTTP/1.1 200 Connection established`, with a header, then bytes both ways), and a
/// request in absolute form (`GET http://host:port/path`) is passed on to that host as it
/// came. Either way it then copies bytes until one side closes: a FIN from one side is passed
/// on as a FIN (`shutdown(SHUT_WR)`), a reset as a reset. Unlike tinyproxy it keeps nothing
/// back and adds nothing, so the faults of the server behind it reach the client as they
/// were made. One thread per connection, `poll(2)` on both sockets.
final class CampaignProxy: Sendable {
    let port: Int
    private let listener: Int32
    private let counts = Mutex<[String: Int]>([:])

    /// `http://127.0.0.1:<port>`.
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// How many connections were tunnelled (`CONNECT`) and forwarded (absolute form).
    var connectionCounts: [String: Int] { counts.withLock { $0 } }

    static func start() throws -> CampaignProxy {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw CampaignProxyError(description: "socket: errno \(errno)") }
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 1024) == 0 else {
            close(listener)
            throw CampaignProxyError(description: "bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let proxy = CampaignProxy(port: Int(UInt16(bigEndian: address.sin_port)), listener: listener)
        let thread = Thread { proxy.acceptForever() }
        thread.name = "CampaignProxy accept"
        thread.start()
        return proxy
    }

    private init(port: Int, listener: Int32) {
        self.port = port
        self.listener = listener
    }

    private func acceptForever() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let thread = Thread { [self] in serve(connection) }
            thread.name = "CampaignProxy connection"
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        guard let (head, rest) = Self.readHead(client) else {
            close(client)
            return
        }
        let requestLine = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard requestLine.count >= 2 else {
            close(client)
            return
        }
        let tunnel = requestLine[0] == "CONNECT"
        let authority: Substring
        if tunnel {
            authority = requestLine[1]
        } else if let schemeEnd = requestLine[1].range(of: "://") {
            authority = requestLine[1][schemeEnd.upperBound...].prefix { $0 != "/" }
        } else {
            _ = Self.sendAll(Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8), to: client)
            close(client)
            return
        }
        let parts = authority.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]), let upstream = Self.connect(host: String(parts[0]), port: port) else {
            _ = Self.sendAll(Array("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8), to: client)
            close(client)
            return
        }
        counts.withLock { $0[tunnel ? "CONNECT" : "forwarded", default: 0] += 1 }
        if tunnel {
            guard Self.sendAll(Array("HTTP/1.1 200 Connection established\r\nProxy-Agent: httpop-campaign\r\n\r\n".utf8), to: client) else {
                close(client)
                close(upstream)
                return
            }
            if !rest.isEmpty, !Self.sendAll(rest, to: upstream) {
                close(client)
                close(upstream)
                return
            }
        } else if !Self.sendAll(head + rest, to: upstream) {
            close(client)
            close(upstream)
            return
        }
        Self.relay(client, upstream)
    }

    /// Copies bytes both ways until both sides have closed, or one reset.
    private static func relay(_ first: Int32, _ second: Int32) {
        let sockets = [first, second]
        var reading = [true, true]
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        defer {
            close(first)
            close(second)
        }
        while reading[0] || reading[1] {
            var polled = [pollfd(fd: reading[0] ? first : -1, events: Int16(POLLIN), revents: 0),
                          pollfd(fd: reading[1] ? second : -1, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&polled, 2, 30_000)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { return }
            for side in 0..<2 where reading[side] && polled[side].revents != 0 {
                let other = sockets[1 - side]
                let count = recv(sockets[side], &buffer, buffer.count, 0)
                if count > 0 {
                    if !sendAll(Array(buffer[0..<count]), to: other) {
                        reset(sockets[side])
                        return
                    }
                } else if count == 0 {
                    reading[side] = false
                    shutdown(other, Int32(SHUT_WR))
                } else if errno != EINTR && errno != EAGAIN {
                    // A reset (or another error): the other side gets a reset too.
                    reset(other)
                    return
                }
            }
        }
    }

    /// Makes the next close of `socket` send a reset.
    private static func reset(_ socket: Int32) {
        var noLinger = linger(l_onoff: 1, l_linger: 0)
        setsockopt(socket, SOL_SOCKET, SO_LINGER, &noLinger, socklen_t(MemoryLayout<linger>.size))
    }

    /// Reads up to the blank line; returns the head (with it) and what came after it.
    private static func readHead(_ socket: Int32) -> ([UInt8], [UInt8])? {
        var bytes = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if bytes.count >= 4 {
                for index in 0...(bytes.count - 4)
                where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
                    return (Array(bytes[0..<(index + 4)]), Array(bytes[(index + 4)...]))
                }
            }
            let count = recv(socket, &buffer, buffer.count, 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0, bytes.count < 64 << 10 else { return nil }
            bytes.append(contentsOf: buffer[0..<count])
        }
    }

    private static func connect(host: String, port: UInt16) -> Int32? {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard upstream >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host == "localhost" ? "127.0.0.1" : host)
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(upstream)
            return nil
        }
        var noDelay: Int32 = 1
        setsockopt(upstream, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        return upstream
    }

    private static func sendAll(_ bytes: [UInt8], to socket: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}

/// Why a ``CampaignProxy`` did not start.
struct CampaignProxyError: Error, CustomStringConvertible {
    let description: String
}
