import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// One request of the resumable-upload routes (see ``UploadStore``): decides at the head,
/// keeps the body's bytes as they arrive, answers at the end, and carries out the request's
/// planned fault.
///
/// Lives on its channel's event loop, driven by ``RequestRouter``.
final class UploadExchange {
    private enum Dialect { case tus, ietf }
    /// What the end of the request answers.
    private enum Plan {
        /// A refusal (or a planned status), decided before the body: the body is discarded.
        case answer(Int, [(String, String)])
        /// Keeps the body into upload `id` from `offset` (creation or append).
        case keep(id: String, offset: Int64, created: Bool)
        /// Answers the offset of upload `id` (HEAD).
        case offset(id: String)
    }

    private let dialect: Dialect
    private let collection: String
    private let head: HTTPRequestHead
    private let store: UploadStore
    private var options = UploadStore.Options()
    private var fault: UploadStore.Fault?
    private var plan = Plan.answer(500, [])
    /// Body bytes of this request seen so far, and kept so far.
    private var received = 0
    /// The body, held whole when the request carries a checksum.
    private var held: Data?
    private var overflowed = false
    private var closed = false
    /// Bytes this request added to its upload so far.
    private var kept = 0

    /// The exchange for `head`, or nil when its path is not an upload route.
    init?(_ head: HTTPRequestHead, store: UploadStore) {
        let path = URLComponents(string: head.uri)?.path ?? head.uri
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count == 2 || parts.count == 3, parts[0] == "tus" || parts[0] == "ietf" else { return nil }
        dialect = parts[0] == "tus" ? .tus : .ietf
        collection = parts[1]
        self.head = head
        self.store = store
        uploadID = parts.count == 3 ? parts[2] : nil
    }

    private let uploadID: String?

    private func field(_ name: String) -> String? { head.headers.first(name: name) }

    /// The request head arrived: decide.
    func start(_ context: ChannelHandlerContext, router: RequestRouter) {
        (options, fault) = store.begin(collection)
        if case .status(let status) = fault { return plan = .answer(status, []) }
        if case .expire = fault, let uploadID { _ = store.withUpload(uploadID) { $0.expired = true } }
        plan = decide(context, router: router)
        if case .dropAfter(let bytes) = fault, bytes == 0 || !carriesBody { drop(context) }
    }

    private var carriesBody: Bool { (Int(field("Content-Length") ?? "") ?? 0) > 0 || field("Transfer-Encoding") != nil }

    private func decide(_ context: ChannelHandlerContext, router: RequestRouter) -> Plan {
        let tus = dialect == .tus
        if tus, head.method != .OPTIONS, field("Tus-Resumable") != "1.0.0" { return .answer(412, [("Tus-Version", "1.0.0")]) }
        if !tus, field("Upload-Draft-Interop-Version") != "6" { return .answer(400, []) }
        switch (head.method, uploadID) {
        case (.OPTIONS, nil) where tus:
            var fields = [("Tus-Version", "1.0.0"), ("Tus-Extension", extensions)]
            if !options.checksumAlgorithms.isEmpty { fields.append(("Tus-Checksum-Algorithm", options.checksumAlgorithms.joined(separator: ","))) }
            if let maximum = options.maximumSize { fields.append(("Tus-Max-Size", "\(maximum)")) }
            return .answer(204, fields)
        case (.OPTIONS, nil):
            guard options.advertisesUploadLimit else { return .answer(405, []) }
            var limits = ["min-size=0"]
            if let maximum = options.maximumSize { limits.append("max-size=\(maximum)") }
            if let most = options.maximumAppendSize { limits.append("max-append-size=\(most)") }
            return .answer(204, [("Upload-Limit", limits.joined(separator: ", "))])
        case (.POST, nil):
            guard let length = field("Upload-Length").flatMap(Int64.init), length >= 0 else { return .answer(400, []) }
            if let maximum = options.maximumSize, length > maximum { return .answer(413, []) }
            if tus, carriesBody, !options.creationWithUpload || field("Content-Type") != "application/offset+octet-stream" {
                return .answer(tus && !options.creationWithUpload ? 400 : 415, [])
            }
            let id = store.create(in: collection, length: length, metadata: field("Upload-Metadata"))
            if !tus, !options.plainEndpoint {
                let interim = HTTPHeaders([("Location", location(of: id)), ("Upload-Draft-Interop-Version", "6")])
                let status = HTTPResponseStatus.custom(code: 104, reasonPhrase: "Upload Resumption Supported")
                InformationalResponseWriter.write(HTTPResponseHead(version: head.version, status: status, headers: interim), in: context)
            }
            return .keep(id: id, offset: 0, created: true)
        case (.HEAD, let id?):
            if let refusal = gone(id) { return refusal }
            return .offset(id: id)
        case (.PATCH, let id?):
            if let refusal = gone(id) { return refusal }
            let type = tus ? "application/offset+octet-stream" : "application/partial-upload"
            guard field("Content-Type") == type else { return .answer(415, []) }
            let (kept, said) = store.withUpload(id) { ($0.count, $0.completeSaid) } ?? (0, false)
            if said { return .answer(400, []) }
            guard let offset = field("Upload-Offset").flatMap(Int64.init), offset == kept else {
                return .answer(409, tus ? [] : [("Upload-Offset", "\(kept)"), ("Upload-Complete", "?0")])
            }
            return .keep(id: id, offset: offset, created: false)
        case (.DELETE, let id?):
            if let refusal = gone(id) { return refusal }
            _ = store.withUpload(id) { $0.deleted = true }
            return .answer(204, [])
        default:
            return .answer(405, [])
        }
    }

    private var extensions: String {
        var names = ["creation", "termination", "expiration"]
        if options.creationWithUpload { names.append("creation-with-upload") }
        if !options.checksumAlgorithms.isEmpty { names.append("checksum") }
        return names.joined(separator: ",")
    }

    private func location(of id: String) -> String {
        "http://\(options.locationHost ?? field("Host") ?? "127.0.0.1")/\(dialect == .tus ? "tus" : "ietf")/\(collection)/\(id)"
    }

    /// The answer for an upload that is not there (any more).
    private func gone(_ id: String) -> Plan? {
        guard let upload = store.withUpload(id, { $0 }) else { return .answer(404, []) }
        if upload.expired { return .answer(dialect == .tus ? 410 : 404, []) }
        return upload.deleted ? .answer(404, []) : nil
    }

    /// A body chunk arrived.
    func received(_ buffer: ByteBuffer, _ context: ChannelHandlerContext) {
        guard !closed, case .keep(let id, let offset, _) = plan else { return }
        var bytes = Data(buffer.readableBytesView)
        if case .dropAfter(let limit) = fault { bytes = bytes.prefix(max(0, limit - received)) }
        // Damage only what a checksum names: without one nothing could tell (as TCP's own
        // checksum makes such damage rare on a real link), and the client is not at fault.
        if case .corrupt = fault, field("Upload-Checksum") != nil, received == 0, !bytes.isEmpty { bytes[bytes.startIndex] ^= 0x01 }
        received += bytes.count
        let through = offset + Int64(received)
        _ = store.withUpload(id) { $0.highestReceived = max($0.highestReceived, through) }
        if field("Upload-Checksum") != nil {
            held = (held ?? Data()) + bytes
        } else {
            keep(bytes, in: id)
        }
        if case .dropAfter(let limit) = fault, received >= limit { return drop(context) }
        if stale { drop(context, as: "stale") }
    }

    /// Appends `bytes` where this request left off, unless another request appended meanwhile
    /// (a client's abandoned request still arriving while its next one runs): a real server locks
    /// its upload; this one refuses the stale request and closes its connection.
    private func keep(_ bytes: Data, in id: String) {
        guard case .keep(_, let offset, _) = plan else { return }
        let fresh = store.withUpload(id) { upload -> Bool in
            guard upload.count == offset + Int64(kept) else { return false }
            let room = Int(upload.length - upload.count)
            if bytes.count > room { overflowed = true }
            let taken = bytes.prefix(max(0, room))
            upload.append(taken)
            kept += taken.count
            return true
        } ?? false
        if !fresh { stale = true }
    }

    /// Set when another request appended to the upload while this one ran.
    private var stale = false

    /// The request ended: answer (or carry out the fault).
    func finished(_ context: ChannelHandlerContext, router: RequestRouter) {
        guard !closed else { return }
        var (status, fields) = (500, [(String, String)]())
        switch plan {
        case .answer(let planned, let planFields):
            (status, fields) = (planned, planFields)
        case .offset(let id):
            (status, fields) = (dialect == .tus ? 200 : 204, offsetFields(of: id) + [("Cache-Control", "no-store")])
        case .keep(let id, _, let created):
            status = commit(into: id)
            if stale { return drop(context, as: "stale") }
            if dialect == .ietf, created, options.plainEndpoint {
                // A plain endpoint: it stored a representation, and says nothing of uploads.
                status = status < 300 ? 200 : status
            } else if status < 300 || status == 409 {
                fields = offsetFields(of: id)
                if created { status = 201; fields.append(("Location", location(of: id))) }
                if dialect == .tus, let after = options.expiresAfter {
                    fields.append(("Upload-Expires", RequestRouter.httpDate(Date().addingTimeInterval(after))))
                }
            }
        }
        if case .dropBeforeAnswer = fault { return drop(context) }
        store.record(collection, "\(head.method.rawValue) \(status)")
        let delay: Int64 = if case .stall(let milliseconds) = fault { Int64(milliseconds) } else { 0 }
        let loopBound = NIOLoopBound((router, context), eventLoop: context.eventLoop)
        let tus = dialect == .tus
        let answer: @Sendable () -> Void = { [head, fields, status] in
            let (router, context) = loopBound.value
            var headers = HTTPHeaders(fields)
            if tus { headers.add(name: "Tus-Resumable", value: "1.0.0") }
            headers.add(name: "Content-Length", value: "0")
            router.writeHead(context, head, status: status, headers: headers)
            router.finish(context, head)
        }
        if delay > 0 { context.eventLoop.scheduleTask(in: .milliseconds(delay), answer) } else { answer() }
    }

    /// Keeps a held (checksummed) body if it matches; applies the end's faults; the status.
    private func commit(into id: String) -> Int {
        if let checksum = field("Upload-Checksum") {
            guard Self.matches(held ?? Data(), checksum) else { return 460 }
            keep(held ?? Data(), in: id)
        }
        if case .loseBytes(let count) = fault { _ = store.withUpload(id) { $0.lose(count) } }
        if overflowed { return 400 }
        if dialect == .ietf, field("Upload-Complete") == "?1" {
            let whole = store.withUpload(id) { upload -> Bool in
                upload.completeSaid = upload.count == upload.length
                return upload.completeSaid
            } ?? false
            if !whole { return 400 }
        }
        return dialect == .tus ? 204 : (head.method == .POST ? 201 : 204)
    }

    private func offsetFields(of id: String) -> [(String, String)] {
        guard let upload = store.withUpload(id, { $0 }) else { return [] }
        let kept = upload.count
        var offset = kept
        switch fault {
        case .reportOffset(let delta)?:
            offset = kept + delta
            if offset == upload.length, kept < upload.length { offset = upload.length - 1 }
        case .claimUnsent(let extra)?:
            offset = max(kept, upload.highestReceived) + extra
        default:
            break
        }
        var fields = [("Upload-Offset", "\(offset)"), ("Upload-Length", "\(upload.length)")]
        if dialect == .ietf { fields.append(("Upload-Complete", upload.completeSaid ? "?1" : "?0")) }
        return fields
    }

    private func drop(_ context: ChannelHandlerContext, as outcome: String = "drop") {
        guard !closed else { return }
        closed = true
        store.record(collection, "\(head.method.rawValue) \(outcome)")
        context.close(promise: nil)
    }

    /// Whether `bytes` match an `Upload-Checksum` value (`<algorithm> <base64>`).
    static func matches(_ bytes: Data, _ checksum: String) -> Bool {
        let parts = checksum.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2, let expected = Data(base64Encoded: parts[1]) else { return false }
        let digest: Data? = switch parts[0].lowercased() {
        case "sha256": Data(SHA256.hash(data: bytes))
        case "sha1": Data(Insecure.SHA1.hash(data: bytes))
        case "md5": Data(Insecure.MD5.hash(data: bytes))
        default: nil
        }
        return digest == expected
    }

}

/// Sits before the response compressor in every connection's pipeline and does nothing, so
/// that an informational (1xx) head can be written from its context: past the compressor,
/// which takes every head it sees for a final one.
final class InformationalResponseWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Writes `head` (a 1xx) from this handler's place in `context`'s pipeline.
    static func write(_ head: HTTPResponseHead, in context: ChannelHandlerContext) {
        guard let writer = try? context.pipeline.syncOperations.context(handlerType: InformationalResponseWriter.self) else { return }
        writer.writeAndFlush(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
    }
}
