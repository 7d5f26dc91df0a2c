import Crypto
import Foundation
import Synchronization

/// The uploads the test server's resumable-upload routes hold, and the faults a test plans
/// for them.
///
/// Routes, for a collection named by the test:
/// - tus 1.0.0 at `/tus/<collection>` (`OPTIONS`, `POST`) and `/tus/<collection>/<id>` (`HEAD`,
///   `PATCH`, `DELETE`), with the creation, creation-with-upload, termination, checksum (sha1,
///   sha256, md5) and expiration extensions;
/// - draft-ietf-httpbis-resumable-upload-05 at `/ietf/<collection>` (`POST`, a 104 with the
///   upload's `Location` first) and `/ietf/<collection>/<id>` (`HEAD`, `PATCH`, `DELETE`).
///
/// An honest server: an append at an offset that is not its own gets 409; bytes are kept as
/// they arrive (so a dropped connection keeps what came), unless the request carries an
/// `Upload-Checksum`, whose bytes are kept only whole and matching (else 460).
///
/// Thread-safety: everything lives in one struct behind one Mutex.
public final class UploadStore: Sendable {
    /// What goes wrong with one request of a collection (requests are counted from 0 across the
    /// collection and its uploads, every method).
    public enum Fault: Sendable, Equatable {
        /// Keeps the first `bytes` of the request's body (none under a checksum), then closes the
        /// connection without an answer. Without a body: closes at once.
        case dropAfter(bytes: Int)
        /// Does all the request asks, then closes the connection without an answer.
        case dropBeforeAnswer
        /// Answers `status` and does nothing else.
        case status(Int)
        /// Answers after `milliseconds`.
        case stall(milliseconds: Int)
        /// Does what is asked, then reports an offset `delta` away from the true one (a lie:
        /// ahead when positive, behind when negative). It never claims the whole length for an
        /// upload that lacks bytes: a server that says it holds bytes it was sent but lost cannot
        /// be caught by any client of these protocols (Docs/ResumableUploads.md), so this server
        /// does not tell that one lie.
        case reportOffset(delta: Int64)
        /// Does what is asked, then reports an offset `extra` bytes past every byte it ever
        /// received for the upload: bytes it was never sent.
        case claimUnsent(extra: Int64)
        /// Loses the last `bytes` it kept (a crash), then answers truthfully.
        case loseBytes(Int)
        /// The upload expires: this request and every later one find it gone (tus 410, the
        /// draft 404).
        case expire
        /// Flips a bit of the body as it arrives (a request with a checksum then gets 460; one
        /// without is left alone, since nothing could tell).
        case corrupt
    }

    /// What a collection's server advertises.
    public struct Options: Sendable, Equatable {
        /// tus `Tus-Checksum-Algorithm` (empty: no checksum extension).
        public var checksumAlgorithms = ["sha1", "sha256", "md5"]
        /// Whether tus's creation-with-upload is advertised (and so accepted).
        public var creationWithUpload = true
        /// tus `Tus-Max-Size`.
        public var maximumSize: Int64?
        /// Sent as tus `Upload-Expires`, this long after creation.
        public var expiresAfter: TimeInterval? = 3_600
        /// The draft: whether `OPTIONS` answers with `Upload-Limit` (a server known to resume);
        /// false: 405, so the client sends the whole upload with its creation.
        public var advertisesUploadLimit = true
        /// The draft: the collection is a plain endpoint that does not resume: no 104, and its
        /// creation's answer is a 200 with no Location (the upload is still kept, for the test).
        public var plainEndpoint = false
        /// The draft's `Upload-Limit` `max-append-size`.
        public var maximumAppendSize: Int64?
        /// The host (with its port) the upload's `Location` names instead of the request's
        /// `Host`: the same server, on another origin (`localhost:port` for `127.0.0.1:port`).
        public var locationHost: String?
        /// Whether the bytes are kept (``Upload/bytes``); false: only counted and hashed
        /// (``Upload/sha256``), so that a test measuring the client's memory in the same
        /// process does not measure the server's. `loseBytes` does nothing then.
        public var keepsBytes = true
        /// The defaults.
        public init() {}
    }

    /// One upload, as the server holds it.
    public struct Upload: Sendable, Equatable {
        public static func == (lhs: Upload, rhs: Upload) -> Bool {
            lhs.id == rhs.id && lhs.count == rhs.count && lhs.bytes == rhs.bytes && lhs.completeSaid == rhs.completeSaid
                && lhs.deleted == rhs.deleted && lhs.expired == rhs.expired
        }

        /// Its id (the last path segment of its URL).
        public let id: String
        /// The collection it was created in.
        public let collection: String
        /// The declared length.
        public let length: Int64
        /// The bytes kept (none when the collection's options keep none).
        public internal(set) var bytes = Data()
        /// How many bytes the server holds.
        public internal(set) var count: Int64 = 0
        /// Whether ``bytes`` holds them, or only ``sha256`` describes them.
        let keepsBytes: Bool
        var hasher = SHA256()
        /// The SHA-256 of the bytes held, lowercase hex (for a collection that keeps none).
        public var sha256: String { hasher.finalize().map { String(format: "%02x", $0) }.joined() }

        /// Adds `more` at the end.
        mutating func append(_ more: Data) {
            if keepsBytes { bytes.append(more) } else { hasher.update(data: more) }
            count += Int64(more.count)
        }

        /// Forgets the last `lost` bytes (only where they are kept).
        mutating func lose(_ lost: Int) {
            guard keepsBytes else { return }
            bytes.removeLast(min(lost, bytes.count))
            count = Int64(bytes.count)
        }
        /// The end of the furthest byte ever received (kept or not).
        public internal(set) var highestReceived: Int64 = 0
        /// The IETF draft: the client said the upload is complete.
        public internal(set) var completeSaid = false
        /// Terminated by a `DELETE`.
        public internal(set) var deleted = false
        /// Expired by a planned fault.
        public internal(set) var expired = false
        /// `Upload-Metadata`, as sent.
        public internal(set) var metadata: String?
    }

    struct State {
        var uploads: [String: Upload] = [:]
        var options: [String: Options] = [:]
        var faults: [String: [Int: Fault]] = [:]
        var requestCounts: [String: Int] = [:]
        /// Per collection: "METHOD status" of each request answered (a dropped one: "METHOD drop";
        /// an append refused because another appended meanwhile: "METHOD stale").
        var log: [String: [String]] = [:]
        var nextID = 0
    }

    let state = Mutex(State())

    init() {}

    /// Sets what `collection` advertises and the faults its requests meet (by request number).
    public func configure(_ collection: String, options: Options = Options(), faults: [Int: Fault] = [:]) {
        state.withLock { state in
            state.options[collection] = options
            state.faults[collection] = faults
        }
    }

    /// The upload at `url` (an upload URL the server gave), if any.
    public func upload(at url: URL) -> Upload? {
        state.withLock { $0.uploads[url.lastPathComponent] }
    }

    /// Every upload created in `collection`, in creation order.
    public func uploads(in collection: String) -> [Upload] {
        state.withLock { state in
            state.uploads.values.filter { $0.collection == collection }.sorted { $0.id < $1.id }
        }
    }

    /// What `collection`'s requests were answered ("METHOD status", "METHOD drop", "METHOD
    /// stale"), in order.
    public func log(of collection: String) -> [String] {
        state.withLock { $0.log[collection] ?? [] }
    }

    /// How many requests `collection` has seen.
    public func requestCount(of collection: String) -> Int {
        state.withLock { $0.requestCounts[collection] ?? 0 }
    }

    // MARK: - For the exchange

    /// Counts a request of `collection`; returns its options and planned fault.
    func begin(_ collection: String) -> (Options, Fault?) {
        state.withLock { state in
            let index = state.requestCounts[collection, default: 0]
            state.requestCounts[collection] = index + 1
            return (state.options[collection] ?? Options(), state.faults[collection]?[index])
        }
    }

    func record(_ collection: String, _ entry: String) {
        state.withLock { $0.log[collection, default: []].append(entry) }
    }

    func create(in collection: String, length: Int64, metadata: String?) -> String {
        state.withLock { state in
            state.nextID += 1
            let id = String(format: "u%06d", state.nextID)
            let keeps = state.options[collection]?.keepsBytes ?? true
            state.uploads[id] = Upload(id: id, collection: collection, length: length, keepsBytes: keeps, metadata: metadata)
            return id
        }
    }

    /// Runs `change` on upload `id` (nil when there is none).
    func withUpload<T>(_ id: String, _ change: (inout Upload) -> T) -> T? {
        state.withLock { state in
            guard var upload = state.uploads[id] else { return nil }
            defer { state.uploads[id] = upload }
            return change(&upload)
        }
    }
}
