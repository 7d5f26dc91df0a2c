import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The server the upload workloads send to: HTTP/1.1 on loopback, one event-loop thread (as the
/// benchmark's nginx has one worker), connections kept alive. It reads each request's whole
/// body, counting its bytes and keeping none, and only then answers `200` with
/// `{"received":N}`: a client is done when the server has every byte, never earlier. (nginx
/// answers a `return` before it has read the body, and a proxy to a sink writes large bodies
/// to disk: neither measures the client.)
///
/// Usage: `uploadsink`: listens on a free loopback port, prints the port (one line, flushed)
/// once it is listening, and runs until killed.
final class Sink: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: one instance per channel, used only on that channel's event loop.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var received = 0
    private var keepAlive = true

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            received = 0
            keepAlive = head.isKeepAlive
        case .body(let chunk):
            received += chunk.readableBytes
        case .end:
            let body = context.channel.allocator.buffer(string: "{\"received\":\(received)}\n")
            var headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", "\(body.readableBytes)")])
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let keepAlive = keepAlive
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
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
