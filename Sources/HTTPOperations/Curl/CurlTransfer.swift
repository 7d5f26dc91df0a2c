import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hears one transfer's events. Every call comes on the network thread, from inside curl's
/// callbacks, so implementations must return quickly and must not block.
protocol CurlTransferDelegate: AnyObject {
    /// A final response head arrived (interim 1xx heads come to
    /// ``transfer(_:didReceiveInformational:)``). Return `false` to abort the transfer before
    /// any of its body is delivered.
    func transfer(_ transfer: CurlTransfer, didReceive head: ResponseHead) -> Bool
    /// An interim 1xx head arrived (100 Continue, 103 Early Hints): never the answer.
    func transfer(_ transfer: CurlTransfer, didReceiveInformational head: ResponseHead)
    /// The trailer fields after the body (a chunked body's trailer section, HTTP/2's trailing
    /// HEADERS), just before the transfer completes.
    func transfer(_ transfer: CurlTransfer, didReceiveTrailers trailers: ResponseHead)
    /// Body bytes arrived, already decoded from any content encoding. Return `.abort` to end
    /// the transfer (it completes with `CURLE_WRITE_ERROR`), or `.later` to leave them with
    /// curl, which pauses the transfer until ``CurlMulti/unpause(_:)`` and then
    /// offers the same bytes again.
    func transfer(_ transfer: CurlTransfer, didReceiveBody bytes: UnsafeRawBufferPointer) -> BodyDisposition
    /// curl took `count` more bytes of the request body.
    func transfer(_ transfer: CurlTransfer, didSendBodyBytes count: Int)
    /// The transfer ended: `error` is nil on success.
    func transfer(_ transfer: CurlTransfer, didCompleteWith error: CurlError?)
}

/// What a ``CurlTransferDelegate`` did with a chunk of response body.
enum BodyDisposition {
    /// The bytes are taken.
    case taken
    /// Not now: curl keeps the bytes and pauses receiving.
    case later
    /// Stop the transfer.
    case abort
}

/// One request and its response, from the first byte to the last, on a curl easy handle.
///
/// Built and used on the network thread only. ``CurlMulti`` lends it an easy handle from its
/// pool when it starts and takes the handle back when it completes or is removed, so a
/// transfer that never starts (one decided while its operation was paused) holds none. The
/// multi handle keeps it alive while curl works on it; it keeps its delegate alive until it
/// completes.
final class CurlTransfer {
    /// The curl easy handle, while curl works on this transfer; nil before and after.
    private(set) var easy: UnsafeMutableRawPointer?
    /// What this transfer sends.
    let request: TransferRequest

    private var delegate: CurlTransferDelegate?
    /// Why the delegate refused the header line or body chunk it was last handed, when it
    /// says: curl then ends the transfer with `CURLE_WRITE_ERROR`, and the error's message
    /// names the refusal, so that one no recorded failure explains can be traced to its guard.
    var refusal: String?
    var headerList: UnsafeMutablePointer<curl_slist>?
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// `CURLOPT_CONNECT_TO` entries (see ``configureRoute()``); curl reads them while the
    /// transfer runs.
    var connectToList: UnsafeMutablePointer<curl_slist>?
    /// Changed once per header line, on the network thread only, by code that calls nothing
    /// back: the dynamic exclusivity check of each access (10 per small response) buys nothing.
    @exclusivity(unchecked) private var headParser = ResponseHeadParser()
    /// Read position in a `.data` body.
    private var bodyOffset = 0
    /// Bytes of a `.stream` body given to curl since its last rewind.
    private var streamBytesRead: Int64 = 0
    /// Reads a `.stream` body off the network thread; made when the transfer starts.
    var bodyReader: BodyReader?

    init(request: consuming TransferRequest, delegate: CurlTransferDelegate) {
        self.isPlain = request.isPlain
        self.request = request
        self.delegate = delegate
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(to: 0)
    }

    deinit {
        assert(easy == nil, "a transfer died holding its easy handle")
        curl_slist_free_all(headerList)
        curl_slist_free_all(connectToList)
        errorBuffer.deallocate()
        bodyReader?.stop()
    }

    /// Why reading the request body failed, when it did: the transfer's real error (curl only
    /// says the read callback aborted). Also the failure of a body whose trailer fields curl
    /// never asked for (``trailersWentUnsent``).
    var bodyReadFailure: URLError? {
        if let failure = bodyReader?.failure { return failure }
        return trailersWentUnsent ? BodyReader.trailersNotSent : nil
    }

    /// curl asked for the trailer fields (it does once the last chunk of a chunked HTTP/1.1
    /// body is sent).
    private var askedForTrailers = false

    /// curl read the end of a streamed body: the whole body went out. Not so when the server
    /// answered before the body ended (curl stops sending then, and asks for no trailers).
    private(set) var readEndOfBody = false

    /// Where the response body ends, for a streamed body (see `CurlTransfer+ResponseEnd.swift`).
    var endWatch: ResponseEndWatch?
    var watchesResponseEnd = false
    /// The response is complete and the request body is still open: ``CurlMulti`` ends the
    /// transfer (`responseEndedFirst`), told through `onResponseEndedFirst`.
    var responseEndedFirst = false
    var onResponseEndedFirst: ((CurlTransfer) -> Void)?
    /// ``CurlMulti`` ended it so, taking it off curl mid-send: its handle is freed.
    var endedAfterResponse = false
    /// curl holds body bytes this transfer's delegate answered `.later` for, until unpaused.
    var holdsReceivedBody = false

    /// The whole body went out over HTTP/2 or 3 with trailer fields, and curl never asked for
    /// them: libcurl (8.14.1 too) sends request trailers only after a chunked HTTP/1.1 body,
    /// and ends an HTTP/2 request's stream without them. The request then fails rather than
    /// pass for one that carried them.
    private(set) var trailersWentUnsent = false

    /// This transfer asked for HTTP/1.1 because it has a trailers block (`configureMethodAndBody`):
    /// its answer says nothing about the HTTP versions its origin speaks (``HTTP1Origins``
    /// does not learn from it), and its connection is not reused by others.
    var forcesHTTP1 = false

    /// Its origin as ``HTTP1Origins`` sees it; set by ``CurlMulti`` as the transfer starts.
    var origin = HTTP1Origins.Origin.plain

    /// Why the server was not trusted, when the pins said no (see `CurlTransfer+Security.swift`):
    /// the transfer's real error (curl only says the pre-request callback aborted).
    var trustFailure: SecurityError?
    /// The server the operation's server-trust block must judge before anything is sent: the
    /// transfer stopped in its pre-request callback to ask.
    var pendingServerTrust: ServerTrust?

    /// The pins or a server-trust block judge each connection before a request is sent on it
    /// (set by `configureSecurity`).
    var checksServerTrust = false
    /// A request went out on this transfer and no byte of an answer has come since.
    private var sentWithoutAnswer = false
    /// curl was about to send this transfer's request (not idempotent) a second time, on a
    /// fresh connection, after the first died before any answer: the server may have acted on
    /// it, so the transfer was stopped instead (see ``preRequest()``).
    private(set) var refusedResend = false

    /// A rewind of the body was refused. libcurl keeps its "rewind before sending" state
    /// across `curl_easy_reset`: the next transfer on the handle, even a GET, would fail with
    /// "necessary data rewind was not possible". Such a handle is freed, never pooled.
    private(set) var refusedRewind = false

    /// Whether this is a plain transfer (``TransferRequest/isPlain``), read once.
    let isPlain: Bool

    /// Whether curl was ever told to hold this transfer's body (`.later`). Its handle then
    /// goes back reset, not primed, so no pause state can reach the next transfer.
    private(set) var pausedReceiving = false

    /// Sets this transfer's options on `easy`. Called by ``CurlMulti`` as the transfer starts.
    ///
    /// - Parameters:
    ///   - primed: `easy` holds the options of a plain transfer under this one's policy (else
    ///     every option is at its default); only a plain transfer is given such a handle.
    ///   - waitsForMultiplexing: Wait for a connection to the origin that might multiplex
    ///     (`CURLOPT_PIPEWAIT`; see ``HTTP1Origins``).
    func attach(to easy: UnsafeMutableRawPointer, primed: Bool, waitsForMultiplexing: Bool) {
        precondition(self.easy == nil, "a transfer runs once")
        precondition(isPlain || !primed, "only a plain transfer may reuse a primed handle")
        self.easy = easy
        if !primed {
            configureShared()
        }
        configure(waitsForMultiplexing: waitsForMultiplexing, primed: primed)
    }

    /// Gives the easy handle back once it is in no multi handle; curl no longer reads this
    /// transfer's header list or body. Called by ``CurlMulti``.
    func detach() -> UnsafeMutableRawPointer? {
        defer { easy = nil }
        bodyReader?.stop()
        if let easy, let store = request.cookieStore {
            // A pooled handle must not keep the store's share handle alive in curl.
            store.engine.value.detach(easy)
        }
        return easy
    }

    /// This transfer set `CURLOPT_TRAILERFUNCTION`. libcurl 7.88 keeps its trailer state
    /// across `curl_easy_reset`: the next chunked upload on the same handle then writes each
    /// chunk's size line before its upload buffer (AddressSanitizer: heap-buffer-overflow,
    /// `AroundTheAnswer`'s trailer tests in a row). Such a handle is freed, never pooled.
    var sendsTrailers = false

    /// Where this transfer's time went, read from curl when it completes.
    private(set) var timings: TransferTimings.Transfer?

    /// Called by ``CurlMulti`` once, when curl is done with this transfer.
    func complete(with code: CURLcode, message: String?) {
        guard let delegate else { return }
        timings = readTimings()
        self.delegate = nil
        var error: CurlError?
        if code != CURLE_OK {
            var detail = message ?? String(cString: errorBuffer)
            if code == CURLE_WRITE_ERROR, let refusal { detail += " (refused: \(refusal))" }
            error = CurlError(code, detail: detail)
        }
        trailersWentUnsent = error == nil && sendsTrailers && readEndOfBody && !askedForTrailers
            && !(timings?.httpVersion?.hasPrefix("1") ?? true) && !(bodyReader?.trailerFields.isEmpty ?? true)
        // Only a body that ended well has trustworthy trailers.
        if error == nil, let trailers = headParser.takeTrailers() {
            delegate.transfer(self, didReceiveTrailers: trailers)
        }
        delegate.transfer(self, didCompleteWith: error)
    }

    // MARK: - Callbacks from curl

    /// `CURLOPT_PREREQFUNCTION`: a request is about to go out on a connection made or reused.
    ///
    /// libcurl sends a request again by itself when the reused connection it went out on
    /// closes before any byte of an answer ("Connection died, retrying a fresh connect"),
    /// rewinding the body if it can. For a method that is not idempotent the server may have
    /// acted on the first: a second request with no answer between is refused here, so a POST
    /// reaches the server at most once. A request sent again after an answer (curl's own
    /// authentication round) goes. Installed for such methods and for server-trust checks only.
    func preRequest() -> Int32 {
        if !request.isIdempotent {
            guard !sentWithoutAnswer else {
                refusedResend = true
                return Int32(ccurl_prereqfunc_abort)
            }
            sentWithoutAnswer = true
        }
        return checksServerTrust ? checkServerTrust() : Int32(ccurl_prereqfunc_ok)
    }

    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Int {
        sentWithoutAnswer = false
        guard let head = headParser.consume(line: line), let delegate else { return line.count }
        if head.isInterim {
            delegate.transfer(self, didReceiveInformational: head)
            return line.count
        }
        // Any other count than the line's aborts the transfer (CURLE_WRITE_ERROR).
        guard delegate.transfer(self, didReceive: head) else { return 0 }
        if watchesResponseEnd { watchBody(of: head) }
        return line.count
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let delegate else {
            refusal = "a body chunk after the transfer completed"
            return 0
        }
        switch delegate.transfer(self, didReceiveBody: bytes) {
        case .taken: return bytes.count
        case .later:
            pausedReceiving = true
            holdsReceivedBody = true
            return Int(ccurl_writefunc_pause)
        case .abort: return 0
        }
    }

    /// Hands curl the trailer fields the body reader was given when the stream ended (checked
    /// there: no field can split the request). curl frees the list.
    func appendTrailers(to list: UnsafeMutablePointer<UnsafeMutablePointer<curl_slist>?>) -> Int32 {
        askedForTrailers = true
        for (name, value) in bodyReader?.trailerFields ?? [] {
            list.pointee = curl_slist_append(list.pointee, "\(name): \(value)")
        }
        return CURL_TRAILERFUNC_OK
    }

    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count: Int
        switch request.body {
        case .none:
            count = 0
        case .data(let data):
            count = min(buffer.count, data.count - bodyOffset)
            if count > 0 {
                let start = data.index(data.startIndex, offsetBy: bodyOffset)
                data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: start..<(start + count))
                bodyOffset += count
            }
        case .stream(_, let declared):
            guard let bodyReader else { return Int(ccurl_readfunc_abort) }
            // Never past the declared length: bytes after it would be read by the server as
            // the next request (libcurl 7.88 sends what the callback gives).
            var buffer = buffer
            if let declared {
                let remaining = Int(clamping: max(0, declared - streamBytesRead))
                guard remaining > 0 else {
                    readEndOfBody = true
                    return 0
                }
                buffer = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(remaining))
            }
            switch bodyReader.read(into: buffer) {
            case .bytes(let read):
                count = read
                streamBytesRead += Int64(read)
                // curl asks for nothing past a declared length: this was the end.
                if let declared, streamBytesRead == declared { readEndOfBody = true }
            case .end:
                count = 0
                readEndOfBody = true
            case .wait: return Int(ccurl_readfunc_pause)
            case .failed: return Int(ccurl_readfunc_abort)
            }
        }
        if count > 0 {
            delegate?.transfer(self, didSendBodyBytes: count)
        }
        return count
    }

    /// curl rewinds the body when it must send it again (an authentication round; a retried
    /// connection, for idempotent methods only). In-memory bodies seek anywhere; a ``RewindableBodyStream`` goes back to
    /// its start (on the reader's queue); other streams cannot.
    func seekBody(to offset: curl_off_t, origin: Int32) -> Int32 {
        let answer = seekAnswer(to: offset, origin: origin)
        if answer != ccurl_seekfunc_ok { refusedRewind = true }
        return answer
    }

    private func seekAnswer(to offset: curl_off_t, origin: Int32) -> Int32 {
        guard origin == SEEK_SET, offset >= 0 else { return ccurl_seekfunc_cantseek }
        // curl's own resend of a request that is not idempotent rewinds first (before
        // ``preRequest()``): refused here already, so a written body's closure does not run again.
        if !request.isIdempotent, sentWithoutAnswer {
            refusedResend = true
            return ccurl_seekfunc_cantseek
        }
        switch request.body {
        case .data(let data) where offset <= data.count:
            bodyOffset = Int(offset)
            return ccurl_seekfunc_ok
        case .stream where offset == 0:
            // The reader rewinds a RewindableBodyStream on its queue, before its next read.
            // The body goes out again, and the trailers after it.
            readEndOfBody = false
            askedForTrailers = false
            streamBytesRead = 0
            return bodyReader?.rewind() == true ? ccurl_seekfunc_ok : ccurl_seekfunc_cantseek
        default:
            return ccurl_seekfunc_cantseek
        }
    }
}
