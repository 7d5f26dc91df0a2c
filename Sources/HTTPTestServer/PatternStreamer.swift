import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Writes pattern bytes while the channel is writable, and resumes when the last of them was
/// written to the socket, so a body of any size holds a few chunks in memory at most.
/// (Write completions, not `channelWritabilityChanged`: NIO's HTTP server pipeline does not
/// pass that event on to handlers behind it.) Optionally drips (a chunk, then a pause) and
/// ends by closing the connection, with FIN or with a reset.
struct PatternStreamer {
    /// How the body ends.
    enum Ending {
        /// The response ends normally.
        case none
        /// The connection closes (FIN) after the bytes: the client sees it lost mid-body.
        case close
        /// The connection is reset (RST) after the bytes.
        case reset
    }

    /// When to pump again.
    enum Next {
        case done
        case afterWrite(EventLoopFuture<Void>)
        case after(TimeAmount)
    }

    private static let defaultChunkSize = 64 << 10

    let request: HTTPRequestHead
    var offset: Int
    var remaining: Int
    /// Added to the offset to choose bytes: another version of the resource.
    let contentShift: Int
    let closeAfter: Ending
    let chunkSize: Int?
    let delay: TimeAmount
    /// The last write handed to the channel.
    private var lastWrite: EventLoopFuture<Void>?

    init(request: HTTPRequestHead, offset: Int = 0, remaining: Int, contentShift: Int = 0,
         closeAfter: Ending = .none, chunkSize: Int? = nil, delay: TimeAmount = .zero) {
        self.request = request
        self.offset = offset
        self.remaining = remaining
        self.contentShift = contentShift
        self.closeAfter = closeAfter
        self.chunkSize = chunkSize
        self.delay = delay
    }

    mutating func pump(context: ChannelHandlerContext, router: RequestRouter) -> Next {
        // The client has gone: nothing more to write, nothing to wake for.
        guard context.channel.isActive else { return .done }
        let dripping = chunkSize != nil
        if dripping, remaining > 0, !context.channel.isWritable, let lastWrite {
            // A client that stopped reading (a paused download): wait for the socket rather than
            // wake every `delay`. If the client goes away instead, that write fails, NIO closes
            // the channel and the streamer is dropped. (Waking on a timer kept the connection
            // in CLOSE-WAIT and the event loop busy for good: a storm of 10,000 paused and
            // cancelled downloads left 517 of them, and the server stopped accepting.)
            return .afterWrite(lastWrite)
        }
        while remaining > 0, context.channel.isWritable {
            let size = min(chunkSize ?? Self.defaultChunkSize, remaining)
            var buffer = context.channel.allocator.buffer(capacity: size)
            let start = offset + contentShift
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { pointer in
                for index in 0..<size {
                    pointer[index] = TestServer.pattern(offset: start + index)
                }
                return size
            }
            offset += size
            remaining -= size
            lastWrite = context.write(router.wrapOutboundOut(.body(.byteBuffer(buffer))))
            if dripping { break }
        }
        context.flush()
        if remaining > 0 {
            if dripping { return .after(delay) }
            return .afterWrite(lastWrite ?? context.eventLoop.makeSucceededVoidFuture())
        }
        switch closeAfter {
        case .none:
            router.finish(context, request)
        case .close:
            context.close(promise: nil)
        case .reset:
            // SO_LINGER with a zero timeout makes close() send RST instead of FIN.
            let channel = context.channel
            guard let provider = channel as? SocketOptionProvider else {
                channel.close(promise: nil)
                break
            }
            provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
                channel.close(promise: nil)
            }
        }
        return .done
    }
}
