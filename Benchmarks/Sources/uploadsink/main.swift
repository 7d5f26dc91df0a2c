import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The server the upload workloads send to: HTTP/1.1 on loopback, one event-loop thread (as the
/// benchmark's nginx has one worker), connections kept alive, `100 Continue` sent to a request
/// that asks for it (as nginx and every common server do). It reads each request's whole body
/// and only then answers, so a client is done when the server has every byte, never earlier.
/// (nginx answers a `return` before it has read the body, and a proxy to a sink writes large
/// bodies to disk: neither measures the client.)
///
/// It also checks what arrived, so that a client that sent the wrong body is counted as
/// failed, not as fast: `?bytes=N` asks for exactly N body bytes, `?json` for a JSON object
/// whose "name" is "HTTPOperations". A body that passes gets `200` and `{"received":N}`; one
/// that does not gets `422` and says why.
///
/// Usage: `uploadsink`: listens on a free loopback port, prints the port (one line, flushed)
/// once it is listening, and runs until killed.
final class Sink: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: one instance per channel, used only on that channel's event loop.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// What the request's query asked the body to be.
    private enum Expected {
        case anything, bytes(Int), json
    }

    private var received = 0
    private var keepAlive = true
    private var expected = Expected.anything
    /// A JSON body, kept to be parsed (the only one kept).
    private var json = Data()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            received = 0
            json.removeAll(keepingCapacity: true)
            keepAlive = head.isKeepAlive
            expected = Self.expected(from: head.uri)
            if head.headers["Expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
            }
        case .body(let chunk):
            received += chunk.readableBytes
            if case .json = expected, json.count < 1 << 16 { json.append(contentsOf: chunk.readableBytesView) }
        case .end:
            let problem = check()
            let text = problem.map { "{\"error\":\"\($0)\"}\n" } ?? "{\"received\":\(received)}\n"
            let body = context.channel.allocator.buffer(string: text)
            var headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", "\(body.readableBytes)")])
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            let status: HTTPResponseStatus = problem == nil ? .ok : .unprocessableEntity
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let keepAlive = keepAlive
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }

    /// Why the body is not what the query asked for; nil when it is.
    private func check() -> String? {
        switch expected {
        case .anything:
            return nil
        case .bytes(let count):
            return received == count ? nil : "received \(received) bytes, not \(count)"
        case .json:
            let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any]
            return object?["name"] as? String == "HTTPOperations" ? nil : "not the benchmark's JSON object"
        }
    }

    private static func expected(from uri: String) -> Expected {
        guard let query = uri.split(separator: "?", maxSplits: 1).dropFirst().first else { return .anything }
        for item in query.split(separator: "&") {
            if item == "json" { return .json }
            if item.hasPrefix("bytes="), let count = Int(item.dropFirst(6)) { return .bytes(count) }
        }
        return .anything
    }
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
            channel.pipeline.addHandler(Sink())
        }
    }
    .bind(host: "127.0.0.1", port: 0)
    .wait()
let port = channel.localAddress!.port!
FileHandle.standardOutput.write(Data("\(port)\n".utf8))
try channel.closeFuture.wait()
