import Foundation
import NIOCore
import NIOHTTP1

/// The full-duplex routes: the response streams while the request body still arrives.
///
/// - `/duplex/echo`: answers 200 at once, then sends back each request body chunk as it
///   arrives, flushed, and ends with the request's trailer fields as its own.
///   `?hold=MS` stops reading the request for MS milliseconds once the head is answered
///   (bytes of a read already under way still arrive), so whatever sends the body finds the
///   connection full for a while (a proxy in front then has to wait for it to take bytes
///   again).
/// - `/duplex/speak/N`: says `say 1\n`, and says the next line only once the request body
///   answered the last one with its number (`1\n`); after `N` answers it says `done\n`. A wrong
///   answer gets `wrong: …\n` and the end. The client can only finish by reading as it writes.
/// - `/duplex/letters/N`: the conformance suite's speak-interleave server. Says `A`, and says
///   the next `A` only once the request body gave one back; after `N` it ends its response
///   while the request body is still open (the suite's client ends its body only once the
///   response has ended). `?length=1` declares `Content-Length: N` instead of chunked;
///   `?trailers=1` ends a chunked response with `X-Letters: N`; `?tail=BYTES` sends that many
///   `B`s after the last `A` came back, before the end. A byte other than `A` gets `?` and the
///   end.
///
/// Lives on its channel's event loop, driven by ``RequestRouter``.
final class DuplexExchange {
    private enum Mode {
        case echo
        case speak(rounds: Int, said: Int)
        case letters(rounds: Int, heard: Int)
    }

    private var mode: Mode
    /// Milliseconds to stop reading after answering the head (`?hold=`), or 0.
    private let hold: Int64
    /// `/duplex/letters`: its response declares its length (`?length=1`), or ends with a
    /// trailer field (`?trailers=1`).
    private let declaresLength: Bool
    private let sendsTrailers: Bool
    /// `/duplex/letters`: bytes sent after the last letter came back (`?tail=`).
    private let tail: Int
    /// Request bytes not yet ending in a newline (speak).
    private var pending = ""
    private var ended = false

    /// The exchange for `head`, or nil when its path is not a duplex route.
    init?(_ head: HTTPRequestHead) {
        let components = URLComponents(string: head.uri)
        let parts = (components?.path ?? head.uri).split(separator: "/").map(String.init)
        guard parts.first == "duplex" else { return nil }
        let query = { (name: String) in components?.queryItems?.first { $0.name == name }?.value }
        hold = query("hold").flatMap(Int64.init) ?? 0
        declaresLength = query("length") == "1"
        sendsTrailers = query("trailers") == "1"
        tail = query("tail").flatMap(Int.init) ?? 0
        switch (parts.count > 1 ? parts[1] : "", parts.count > 2 ? Int(parts[2]) : nil) {
        case ("echo", _): mode = .echo
        case ("speak", let rounds?): mode = .speak(rounds: rounds, said: 0)
        case ("letters", let rounds?) where rounds > 0: mode = .letters(rounds: rounds, heard: 0)
        default: return nil
        }
    }

    /// The request head arrived: answer at once.
    func start(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, router: RequestRouter) {
        var framing = ("Transfer-Encoding", "chunked")
        if case .letters(let rounds, _) = mode, declaresLength { framing = ("Content-Length", "\(rounds + tail)") }
        router.writeHead(context, head, status: 200, headers: HTTPHeaders([("Content-Type", "application/octet-stream"), framing]))
        switch mode {
        case .speak: sayNext(context, router: router)
        case .letters: send(ByteBuffer(string: "A"), context, router: router)
        case .echo: context.flush()
        }
        if hold > 0 { holdReading(context) }
    }

    /// Stops reading for ``hold`` milliseconds: the request's bytes back up in the sender.
    private func holdReading(_ context: ChannelHandlerContext) {
        let channel = context.channel, hold = hold
        channel.setOption(ChannelOptions.autoRead, value: false).whenSuccess {
            channel.eventLoop.scheduleTask(in: .milliseconds(hold)) {
                // Turning autoRead back on reads again at once.
                _ = channel.setOption(ChannelOptions.autoRead, value: true)
            }
        }
    }

    /// A request body chunk arrived.
    func received(_ buffer: ByteBuffer, _ context: ChannelHandlerContext, router: RequestRouter) {
        guard !ended else { return }
        switch mode {
        case .echo:
            send(buffer, context, router: router)
        case .speak(let rounds, let said):
            pending += String(decoding: buffer.readableBytesView, as: UTF8.self)
            while let newline = pending.firstIndex(of: "\n") {
                let line = String(pending[..<newline])
                pending.removeSubrange(...newline)
                guard line == "\(said)" else {
                    send(ByteBuffer(string: "wrong: \(line)\n"), context, router: router)
                    return end(context, router: router, trailers: nil)
                }
                if said == rounds {
                    send(ByteBuffer(string: "done\n"), context, router: router)
                    return end(context, router: router, trailers: nil)
                }
                sayNext(context, router: router)
            }
        case .letters(let rounds, var heard):
            for byte in buffer.readableBytesView {
                guard byte == UInt8(ascii: "A") else {
                    send(ByteBuffer(string: "?"), context, router: router)
                    return end(context, router: router, trailers: nil)
                }
                heard += 1
                mode = .letters(rounds: rounds, heard: heard)
                if heard == rounds {
                    if tail > 0 { send(ByteBuffer(repeating: UInt8(ascii: "B"), count: tail), context, router: router) }
                    let trailers = sendsTrailers && !declaresLength ? HTTPHeaders([("X-Letters", "\(rounds)")]) : nil
                    return end(context, router: router, trailers: trailers)
                }
                send(ByteBuffer(string: "A"), context, router: router)
            }
        }
    }

    /// The request ended, with `trailers`.
    func finished(_ trailers: HTTPHeaders?, _ context: ChannelHandlerContext, router: RequestRouter) {
        guard !ended else { return }
        end(context, router: router, trailers: trailers)
    }

    private func sayNext(_ context: ChannelHandlerContext, router: RequestRouter) {
        guard case .speak(let rounds, let said) = mode else { return }
        mode = .speak(rounds: rounds, said: said + 1)
        send(ByteBuffer(string: "say \(said + 1)\n"), context, router: router)
    }

    private func send(_ buffer: ByteBuffer, _ context: ChannelHandlerContext, router: RequestRouter) {
        context.writeAndFlush(router.wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
    }

    private func end(_ context: ChannelHandlerContext, router: RequestRouter, trailers: HTTPHeaders?) {
        ended = true
        context.writeAndFlush(router.wrapOutboundOut(.end(trailers)), promise: nil)
    }
}
