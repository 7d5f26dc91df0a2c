import NIOCore
import NIOHTTP1
import Synchronization

/// A request head a ``TestServer`` received.
public struct ReceivedRequest: Sendable, Equatable {
    /// The method, as sent.
    public let method: String
    /// The request target (path and query).
    public let uri: String
    /// The header fields, in order.
    public let headers: [(name: String, value: String)]

    /// The value of the first field called `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public static func == (lhs: ReceivedRequest, rhs: ReceivedRequest) -> Bool {
        lhs.method == rhs.method && lhs.uri == rhs.uri && lhs.headers.elementsEqual(rhs.headers) { $0 == $1 }
    }
}

/// The request heads one server received, shared by its connections.
final class ReceivedRequests: Sendable {
    private static let limit = 10_000
    private let heads = Mutex<[ReceivedRequest]>([])

    func record(_ request: ReceivedRequest) {
        heads.withLock { heads in
            if heads.count == Self.limit { heads.removeFirst(heads.count / 2) }
            heads.append(request)
        }
    }

    var all: [ReceivedRequest] { heads.withLock { $0 } }
}

/// Records each request head, then passes everything on. On its channel's event loop.
final class RequestLogger: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let log: ReceivedRequests

    init(log: ReceivedRequests) {
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            log.record(ReceivedRequest(method: head.method.rawValue, uri: head.uri,
                                       headers: head.headers.map { ($0.name, $0.value) }))
        }
        context.fireChannelRead(data)
    }
}
