import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - The server

/// A raw TCP server on a loopback port serving ``AdversarialResource``s at `/r/<key>`: each
/// request takes the next step of the resource's script (one for requests with a `Range`,
/// one for those without), which may change the resource
/// (with or without a new `ETag`, `Last-Modified` or length), ignore `If-Range`, answer a
/// `Range` with a short, overlapping or late-starting `206`, a `206` without
/// `Content-Range`, a `200`, a `416` or a 4xx/5xx, and close the connection with a FIN or a
/// reset before the head or at any byte of the body. Answers may also be chunked, gzipped
/// (whole answers only, their strong `ETag` sent weak, as nginx's gzip filter does), carry a
/// strong `ETag` weakened, name an unknown (`/*`) or absurd (`…-9223372036854775807/*`)
/// range, put validators on a 416, or redirect to the same resource by another path. An
/// answer closes its connection (`Connection: close`) unless its step keeps it alive; then the
/// next request on it takes the next step, which may close it unanswered.
///
/// What it never does is lie in a way no client could see: the bytes of a `206` are the ones
/// its `Content-Range` names, and a version with new bytes differs from every earlier
/// version in its `ETag`, its `Last-Modified` or its length. So a client that checks what it
/// is given can always keep its promise: a complete download is exactly one version; a
/// failed one holds a prefix of one version, named by its resume data. ``versions(of:)``
/// lists every version the resource had, for the test's oracle; ``log(of:)`` what each
/// request got.
///
/// Like ``FaultServer``: blocking sockets, a thread per connection; the HTTP is written by
/// hand so that it can be wrong on purpose.
public final class AdversarialResumeServer: Sendable {
    /// The loopback port the server listens on.
    public let port: Int
    private let listener: Int32
    private let resources = Mutex<[String: ResourceState]>([:])
    private let answered = Mutex<[String: Int]>([:])
    /// How many times each POST (by its `/p/<id>` path) arrived: counted when its head is
    /// read, before its body, so a resend whose first body was cut counts twice.
    private let postArrivals = Mutex<[String: Int]>([:])
    /// The POSTs whose answer was written whole.
    private let postsAnswered = Mutex<Set<String>>([])
    private let stopped = Atomic<Bool>(false)

    /// Starts a server on 127.0.0.1 and a port the kernel picks.
    public static func start() throws -> AdversarialResumeServer {
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
        guard bound == 0, listen(listener, 1024) == 0 else {
            close(listener)
            throw FaultServerError("bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let server = AdversarialResumeServer(port: Int(UInt16(bigEndian: address.sin_port)), listener: listener)
        let thread = Thread { server.acceptForever() }
        thread.name = "AdversarialResumeServer accept"
        thread.start()
        return server
    }

    private init(port: Int, listener: Int32) {
        self.port = port
        self.listener = listener
    }

    /// Stops accepting connections (those open run to their end).
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// The path `resource` is served at.
    public static func path(of key: String) -> String { "/r/" + key }

    /// Serves `resource` from now on (replacing one with the same key).
    public func register(_ resource: AdversarialResource) {
        let state = ResourceState(resource)
        resources.withLock { $0[resource.key] = state }
    }

    /// From now on answers every request for `key` as RFC 9110 says, and changes nothing:
    /// what is left of its scripts is dropped. A client that can finish, must finish now.
    public func settle(_ key: String) {
        resources.withLock { $0[key]?.settled = true }
    }

    /// Forgets a resource: its path answers 404.
    public func remove(_ key: String) {
        resources.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// Every version `key` has had, the first one first.
    public func versions(of key: String) -> [AdversarialVersion] {
        resources.withLock { $0[key]?.versions ?? [] }
    }

    /// The version `key` serves now: the last one made, or an earlier one the resource went
    /// back to (a length changed, then changed back).
    public func currentVersion(of key: String) -> AdversarialVersion? {
        resources.withLock { $0[key].map { $0.versions[$0.current] } }
    }

    /// What each request for `key` asked and got, one line per request.
    public func log(of key: String) -> [String] {
        resources.withLock { $0[key]?.log ?? [] }
    }

    /// How many requests for `key` the server has answered (or begun to).
    public func requestCount(of key: String) -> Int {
        resources.withLock { $0[key]?.requests ?? 0 }
    }

    /// Whether the server wrote its whole answer to the POST to ``postPath(of:)``.
    public func answered(post id: String) -> Bool {
        postsAnswered.withLock { $0.contains(id) }
    }

    /// How many times the POST to ``postPath(of:)`` arrived (its head read), answered or not.
    public func arrivals(ofPost id: String) -> Int {
        postArrivals.withLock { $0[id] ?? 0 }
    }

    /// The path of a POST the server counts: it answers `200` with `posted <id>` and keeps the
    /// connection open, unless the request carries `X-Close-If-Reused: 1` and came on a reused
    /// connection: then it closes the connection unanswered, as a server whose keep-alive
    /// timeout ran out as the request arrived. A client must not send it again by itself.
    public static func postPath(of id: String) -> String { "/p/" + id }

    /// How many answers of each kind the server gave so far (by ``AdversarialStep/Answer``'s
    /// kind as sent, drops, changes): what a campaign really exercised.
    public var answerCounts: [String: Int] { answered.withLock { $0 } }

    private func count(_ kinds: [String]) {
        answered.withLock { counts in
            for kind in kinds { counts[kind, default: 0] += 1 }
        }
    }

    private func acceptForever() {
        while !stopped.load(ordering: .relaxed) {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            var noDelay: Int32 = 1
            setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in serve(connection) }
            thread.name = "AdversarialResumeServer connection"
            thread.start()
        }
    }

    // MARK: Answering

    /// A request head, as far as this server reads it.
    struct Request {
        var method: String
        var key: String?
        var range: (first: Int, last: Int?)?
        var rawRange: String?
        var ifRange: String?
        var acceptsGzip = false
        /// The id of a POST to ``postPath(of:)``.
        var postID: String?
        /// `X-Close-If-Reused: 1` (see ``postPath(of:)``).
        var closeIfReused = false
    }

    /// What to write: a head, a body, and where to stop.
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        var drop: AdversarialStep.Drop?
        var chunkSize: Int
        var chunkDelayMicroseconds: Int
        var chunked = false
        var keepAlive = false
    }

    private func serve(_ connection: Int32) {
        var open = true
        defer { if open { close(connection) } }
        var served = 0
        while let request = readRequest(connection) {
            if served > 0 { count(["request on a reused connection"]) }
            served += 1
            if let id = request.postID {
                if request.closeIfReused, served > 1 {
                    count(["POST closed unanswered on a reused connection"])
                    open = !closeConnection(connection, reset: false)
                    return
                }
                count(["POST answered"])
                let body = Array("posted \(id)".utf8)
                let answer = Response(status: 200, headers: [], body: body, drop: nil, chunkSize: body.count, chunkDelayMicroseconds: 0,
                                      keepAlive: true)
                guard self.answer(request, response: answer, on: connection, open: &open) else { return }
                postsAnswered.withLock { _ = $0.insert(id) }
                continue
            }
            guard answer(request, response: respond(to: request), on: connection, open: &open) else { return }
        }
    }

    /// Writes `response`; true when the connection stays open for the next request.
    private func answer(_ request: Request, response: Response, on connection: Int32, open: inout Bool) -> Bool {
        if let drop = response.drop, drop.beforeHead {
            open = !closeConnection(connection, reset: drop.reset)
            return false
        }
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        let sendsBody = request.method != "HEAD"
        head += response.chunked && sendsBody ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(response.body.count)\r\n"
        head += response.keepAlive ? "\r\n" : "Connection: close\r\n\r\n"
        guard write(Array(head.utf8), to: connection) else { return false }
        // What goes on the wire: chunked, one chunk per write; a drop cuts it anywhere, the
        // framing included.
        let body = response.chunked && sendsBody ? Self.chunkedFraming(response.body, chunkSize: response.chunkSize) : response.body
        var cut = body.count
        if let drop = response.drop {
            cut = min(body.count, max(0, Int(drop.bodyFraction * Double(body.count))))
        }
        var offset = 0
        if sendsBody {
            // A chunk's framing goes with its data in one write.
            let writeSize = response.chunked ? response.chunkSize + 16 : response.chunkSize
            while offset < cut {
                if offset > 0, response.chunkDelayMicroseconds > 0 { usleep(UInt32(response.chunkDelayMicroseconds)) }
                let end = min(cut, offset + writeSize)
                guard write(Array(body[offset..<end]), to: connection) else { return false }
                offset = end
            }
        }
        if let drop = response.drop {
            open = !closeConnection(connection, reset: drop.reset)
            return false
        }
        if response.keepAlive { return true }
        // Closes with a FIN once the client has read the answer: wait for its close (or a
        // second), so that a reset of unread bytes never cuts a complete answer short.
        Self.shutdownAndDrain(connection)
        return false
    }

    /// `body` as chunked transfer coding, `chunkSize` bytes of data per chunk, then the last chunk.
    static func chunkedFraming(_ body: [UInt8], chunkSize: Int) -> [UInt8] {
        var wire: [UInt8] = []
        var offset = 0
        while offset < body.count {
            let end = min(body.count, offset + chunkSize)
            wire += Array((String(end - offset, radix: 16) + "\r\n").utf8) + body[offset..<end] + [13, 10]
            offset = end
        }
        return wire + Array("0\r\n\r\n".utf8)
    }

    /// Closes `connection` with a reset or a FIN; true when it was closed.
    private func closeConnection(_ connection: Int32, reset: Bool) -> Bool {
        if reset {
            var noLinger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &noLinger, socklen_t(MemoryLayout<linger>.size))
            close(connection)
            return true
        }
        Self.shutdownAndDrain(connection)
        return false
    }

    /// Sends a FIN and reads (and drops) whatever comes until the peer closes, at most 2 s.
    private static func shutdownAndDrain(_ connection: Int32) {
        shutdown(connection, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sink = [UInt8](repeating: 0, count: 4096)
        while recv(connection, &sink, sink.count, 0) > 0 {}
    }

    /// Decides the answer to `request`: takes the resource's next step, changes the resource
    /// if the step says so, and builds what the step asks for from the current version.
    func respond(to request: Request) -> Response {
        guard let key = request.key else {
            return Response(status: 400, headers: [], body: Array("bad request\n".utf8), drop: nil, chunkSize: 1 << 16,
                            chunkDelayMicroseconds: 0)
        }
        let decided = resources.withLock { resources -> (Response, [String])? in
            guard var state = resources[key] else { return nil }
            let (response, counted) = state.answer(request)
            resources[key] = state
            return (response, counted)
        }
        guard let (response, counted) = decided else {
            return Response(status: 404, headers: [], body: Array("no such resource\n".utf8), drop: nil, chunkSize: 1 << 16,
                            chunkDelayMicroseconds: 0)
        }
        count(counted)
        return response
    }

    /// Reads the request head; nil when the peer went first or sent no HTTP.
    private func readRequest(_ connection: Int32) -> Request? {
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while Self.endOfHead(head) == nil {
            let count = recv(connection, &buffer, buffer.count, 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            head.append(contentsOf: buffer[0..<count])
            if head.count > 64 * 1024 { return nil }
        }
        let text = String(decoding: head[0..<Self.endOfHead(head)!], as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var target = String(requestLine[1])
        // Absolute form, as a forwarding proxy passes it on: keep the path.
        if let schemeEnd = target.range(of: "://") {
            let afterScheme = target[schemeEnd.upperBound...]
            target = afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? "/"
        }
        var request = Request(method: String(requestLine[0]), key: nil, range: nil, rawRange: nil, ifRange: nil)
        if target.hasPrefix("/r/") {
            request.key = String(target.dropFirst(3).prefix { $0 != "?" })
        } else if request.method == "POST", target.hasPrefix("/p/") {
            request.postID = String(target.dropFirst(3))
        }
        if let id = request.postID { postArrivals.withLock { $0[id, default: 0] += 1 } }
        var bodyLength = 0
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch name {
            case "range":
                request.rawRange = value
                request.range = Self.parseRange(value)
            case "if-range":
                request.ifRange = value
            case "accept-encoding":
                request.acceptsGzip = value.lowercased().contains("gzip")
            case "x-close-if-reused":
                request.closeIfReused = value == "1"
            case "content-length":
                bodyLength = Int(value) ?? 0
            default:
                break
            }
        }
        // A body (a POST's) is read and dropped, so that the next request starts where it should.
        var unread = bodyLength - (head.count - Self.endOfHead(head)! - 4)
        while unread > 0 {
            let count = recv(connection, &buffer, min(buffer.count, unread), 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            unread -= count
        }
        return request
    }

    /// `bytes=first-` or `bytes=first-last` (one range only).
    static func parseRange(_ value: String) -> (first: Int, last: Int?)? {
        guard value.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = value.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        guard let first = Int(spec[..<dash].trimmingCharacters(in: .whitespaces)) else { return nil }
        let lastText = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if lastText.isEmpty { return (first, nil) }
        guard let last = Int(lastText), last >= first else { return nil }
        return (first, last)
    }

    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status"
        }
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
