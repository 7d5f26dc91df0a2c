import Foundation
import NIOCore
import NIOPosix

/// A loopback server that passes every byte of each connection on to a backend port and
/// back, after `securingConnections` (a TLS handler) has had the connection: how
/// `HTTPTestTLSServer`'s `TLSRelay` puts TLS in front of a raw server such as
/// ``AdversarialResumeServer``. The backend's FIN becomes a close (after the bytes before it),
/// its reset a reset.
package final class ByteRelay: Sendable {
    /// The loopback port the relay listens on.
    package let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    private init(port: Int, group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.port = port
        self.group = group
        self.channel = channel
    }

    /// Starts a relay on 127.0.0.1 and a port the kernel picks, to `127.0.0.1:<backendPort>`.
    package static func start(forwardingTo backendPort: Int, threads: Int = 1,
                              securingConnections: @escaping @Sendable (any Channel) throws -> Void) throws -> ByteRelay {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try securingConnections(channel)
                    try channel.pipeline.syncOperations.addHandler(RelayFrontHandler(backendPort: backendPort))
                }
            }
        do {
            let channel = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
            return ByteRelay(port: channel.localAddress?.port ?? 0, group: group, channel: channel)
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
    }

    /// Stops listening and closes every connection.
    package func shutdown() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}

/// The client's side: opens the backend connection and writes what the client sends to it.
private final class RelayFrontHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let backendPort: Int
    private var backend: (any Channel)?
    private var pending: [ByteBuffer] = []
    private var frontClosed = false

    init(backendPort: Int) {
        self.backendPort = backendPort
    }

    func channelActive(context: ChannelHandlerContext) {
        let front = context.channel
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { back in
                back.eventLoop.makeCompletedFuture {
                    try back.pipeline.syncOperations.addHandler(RelayBackHandler(front: front))
                }
            }
            .connect(host: "127.0.0.1", port: backendPort)
            .whenComplete { result in
                let handler = handler.value
                switch result {
                case .success(let back):
                    handler.backend = back
                    for buffer in handler.pending { back.write(buffer, promise: nil) }
                    handler.pending = []
                    back.flush()
                    if handler.frontClosed { back.close(promise: nil) }
                case .failure:
                    front.close(promise: nil)
                }
            }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if let backend {
            backend.writeAndFlush(buffer, promise: nil)
        } else {
            pending.append(buffer)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        frontClosed = true
        backend?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// The backend's side: writes what the backend sends to the client, and closes the client
/// the way the backend closed.
private final class RelayBackHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let front: any Channel
    private var lastWrite: EventLoopFuture<Void>?
    private var reset = false

    init(front: any Channel) {
        self.front = front
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastWrite = front.writeAndFlush(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        guard !reset else { return }
        let front = self.front
        if let lastWrite {
            lastWrite.whenComplete { _ in front.close(promise: nil) }
        } else {
            front.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The backend reset the connection: reset the client's too.
        reset = true
        let front = self.front
        if let options = front as? any SocketOptionProvider {
            options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in front.close(promise: nil) }
        } else {
            front.close(promise: nil)
        }
        context.close(promise: nil)
    }
}
