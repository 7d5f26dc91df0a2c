import Foundation
import NIOCore
import NIOHTTP1

/// Reads one request at a time from a connection and answers it by its path.
///
/// Lives on its channel's event loop; NIO calls it from that loop only.
final class RequestRouter: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// A response header that asks ``HTTPResponseCompressor`` to compress; removed before sending.
    static let compressMarker = "x-test-server-compress"

    /// Request bodies are kept up to this size for echoing; longer ones are counted only.
    private static let echoBodyLimit = 16 << 20
    /// Request bodies up to this size that are valid UTF-8 are echoed as text.
    private static let echoTextLimit = 1 << 20

    private var head: HTTPRequestHead?
    private var body = Data()
    private var bodyLength = 0
    /// The request's trailer fields, for the echo.
    private var trailers: [String: String] = [:]
    /// `/upload` only counts what it receives, so a huge upload costs the server no memory.
    private var keepsBody = true
    var streamer: PatternStreamer?
    /// The full-duplex exchange in progress (`/duplex/...`), which answers as the body comes.
    private var duplex: DuplexExchange?
    /// The resumable-upload request in progress (`/tus/...`, `/ietf/...`).
    private var upload: UploadExchange?
    /// Shared by every connection of one server.
    let counters: ResourceCounters

    init(counters: ResourceCounters) {
        self.counters = counters
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if let exchange = DuplexExchange(head) {
                duplex = exchange
                return exchange.start(context, head, router: self)
            }
            if let exchange = UploadExchange(head, store: counters.uploads) {
                upload = exchange
                return exchange.start(context, router: self)
            }
            self.head = head
            body = Data()
            bodyLength = 0
            trailers = [:]
            keepsBody = !head.uri.hasPrefix("/upload")
        case .body(let buffer) where duplex != nil:
            duplex?.received(buffer, context, router: self)
        case .end(let fields) where duplex != nil:
            duplex?.finished(fields, context, router: self)
            duplex = nil
        case .body(let buffer) where upload != nil:
            upload?.received(buffer, context)
        case .end where upload != nil:
            upload?.finished(context, router: self)
            upload = nil
        case .body(let buffer):
            bodyLength += buffer.readableBytes
            if keepsBody, body.count < Self.echoBodyLimit {
                body.append(contentsOf: buffer.readableBytesView)
            }
        case .end(let fields):
            for (name, value) in fields ?? [:] { trailers[name.lowercased()] = value }
            guard let head else { return }
            self.head = nil
            route(head, context: context)
        }
    }

    // MARK: - Routing

    private func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let components = URLComponents(string: head.uri)
        let query = Dictionary((components?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let parts = (components?.path ?? head.uri).split(separator: "/").map(String.init)
        let number = parts.count > 1 ? Int(parts[1]) : nil

        switch (parts.first ?? "", number) {
        case ("status", let code?):
            respond(context, head, status: code, body: Data())
        case ("json-status", let code?):
            let body = #"{"status":\#(code),"message":"error \#(code) explained"}"#
            respond(context, head, status: code, body: Data(body.utf8), contentType: "application/json")
        case ("upload", _):
            let summary = #"{"bodyLength":\#(bodyLength),"contentLength":"\#(head.headers.first(name: "Content-Length") ?? "")"}"#
            respond(context, head, status: 200, body: Data(summary.utf8), contentType: "application/json")
        case ("echo", _):
            respond(context, head, status: 200, body: echo(head, query: query), contentType: "application/json")
        case ("delay", let milliseconds?):
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            counters.delayBegan()
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
                let (router, context) = loopBound.value
                router.counters.delayEnded()
                router.respond(context, head, status: 200, body: Data("delayed \(milliseconds) ms".utf8))
            }
        case ("bytes", let count?):
            stream(context, head, count: count, chunked: false)
        case ("chunked", let count?):
            stream(context, head, count: count, chunked: true)
        case ("gzip", let count?):
            stream(context, head, count: count, chunked: false, compress: true)
        case ("redirect", let times?):
            if times > 0 {
                respond(context, head, status: 302, body: Data("redirecting".utf8), extra: [("Location", "/redirect/\(times - 1)")])
            } else {
                respond(context, head, status: 200, body: Data("redirected".utf8))
            }
        case ("redirect-to", _):
            let status = Int(query["status"] ?? "") ?? 302
            respond(context, head, status: status, body: Data("redirecting".utf8), extra: [("Location", query["url"] ?? "/")])
        case ("basic-auth", _) where parts.count == 3:
            basicAuth(context, head, user: parts[1], password: parts[2])
        case ("drop", let total?) where parts.count == 3:
            drop(context, head, total: total, after: Int(parts[2]) ?? 0)
        case ("flaky", _) where parts.count == 4:
            let seen = counters.next(parts[1])
            if seen < Int(parts[2]) ?? 0 {
                let extra = query["retryAfter"].map { [("Retry-After", $0)] } ?? []
                respond(context, head, status: Int(parts[3]) ?? 503, body: Data("try again later (\(seen + 1))".utf8), extra: extra)
            } else {
                stream(context, head, count: Int(query["count"] ?? "") ?? 0, chunked: false)
            }
        case ("cacheable", _) where parts.count == 2:
            cacheable(context, head, key: parts[1], query: query)
        case ("resumable", let size?):
            resumable(context, head, size: size, query: query)
        case ("events", _) where parts.count == 2:
            eventFeed(context, head, feed: EventFeed(query: query), index: counters.next("events/" + parts[1]))
        case ("text", _):
            let charset = query["charset"] ?? "utf-8"
            let encoding: String.Encoding = charset.lowercased() == "iso-8859-1" ? .isoLatin1 : .utf8
            let body = (query["text"] ?? "").data(using: encoding) ?? Data()
            respond(context, head, status: 200, body: body, contentType: "text/plain; charset=\(charset)")
        default:
            respond(context, head, status: 404, body: Data("no route for \(head.uri)".utf8))
        }
    }

    // MARK: - Responses

    func respond(_ context: ChannelHandlerContext, _ request: HTTPRequestHead, status: Int, body: Data,
                 contentType: String = "text/plain", extra: [(String, String)] = []) {
        var headers = HTTPHeaders([("Content-Type", contentType), ("Content-Length", "\(body.count)")])
        headers.add(contentsOf: extra)
        writeHead(context, request, status: status, headers: headers)
        if request.method != .HEAD, !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        }
        finish(context, request)
    }

    func writeHead(_ context: ChannelHandlerContext, _ request: HTTPRequestHead, status: Int, headers: HTTPHeaders) {
        var headers = headers
        if !request.isKeepAlive {
            headers.replaceOrAdd(name: "Connection", value: "close")
        }
        let head = HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
    }

    func finish(_ context: ChannelHandlerContext, _ request: HTTPRequestHead) {
        let keepAlive = request.isKeepAlive
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { loopBound.value.close(promise: nil) }
        }
    }

    private func echo(_ head: HTTPRequestHead, query: [String: String]) -> Data {
        var headers: [String: String] = [:]
        for (name, value) in head.headers {
            headers[name.lowercased(), default: ""] += headers[name.lowercased()] == nil ? value : ", " + value
        }
        var object: [String: Any] = [
            "method": head.method.rawValue,
            "path": head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri,
            "query": query,
            "headers": headers,
            "bodyLength": bodyLength,
            "trailers": trailers,
        ]
        // Text bodies come back as text; large or binary ones only as their length (encoding
        // megabytes of binary as a JSON string costs seconds and tells a test nothing more).
        if body.count <= Self.echoTextLimit, let text = String(data: body, encoding: .utf8) {
            object["body"] = text
        }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    private func basicAuth(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, user: String, password: String) {
        let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        if head.headers.first(name: "Authorization") == expected {
            respond(context, head, status: 200, body: Data(#"{"authenticated":true,"user":"\#(user)"}"#.utf8),
                    contentType: "application/json")
        } else {
            respond(context, head, status: 401, body: Data("credentials required".utf8),
                    extra: [("WWW-Authenticate", #"Basic realm="test server""#)])
        }
    }

    private func stream(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, count: Int, chunked: Bool, compress: Bool = false) {
        var headers = HTTPHeaders([("Content-Type", "application/octet-stream")])
        if chunked || compress {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        } else {
            headers.add(name: "Content-Length", value: "\(count)")
        }
        if compress { headers.add(name: Self.compressMarker, value: "1") }
        writeHead(context, head, status: 200, headers: headers)
        guard head.method != .HEAD else { return finish(context, head) }
        streamer = PatternStreamer(request: head, remaining: count)
        pumpStreamer(context: context)
    }

    /// Sends the head and the first `after` bytes of a `total`-byte body, then closes: the
    /// client sees a connection lost mid-body.
    private func drop(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, total: Int, after: Int) {
        let headers = HTTPHeaders([("Content-Type", "application/octet-stream"), ("Content-Length", "\(total)")])
        writeHead(context, head, status: 200, headers: headers)
        streamer = PatternStreamer(request: head, remaining: min(after, total), closeAfter: .close)
        pumpStreamer(context: context)
    }

    /// Writes what the channel takes now; the streamer stays while bytes remain, and runs
    /// again when its last write reached the socket, or after its drip delay.
    func pumpStreamer(context: ChannelHandlerContext) {
        guard var current = streamer else { return }
        streamer = nil
        let next = current.pump(context: context, router: self)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        switch next {
        case .done:
            return
        case .afterWrite(let lastWrite):
            streamer = current
            lastWrite.whenSuccess {
                // Through execute: a write that already completed would otherwise recurse.
                loopBound.value.1.eventLoop.execute {
                    let (router, context) = loopBound.value
                    router.pumpStreamer(context: context)
                }
            }
        case .after(let delay):
            streamer = current
            context.eventLoop.scheduleTask(in: delay) {
                let (router, context) = loopBound.value
                router.pumpStreamer(context: context)
            }
        }
    }
}
