import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The options a transfer sets on its easy handle: those every transfer shares, the method and
/// body, the header fields. Network thread only, as the transfer.
extension CurlTransfer {
    /// The options every transfer sets to the same values.
    func configureShared() {
        setLong(CURLOPT_NOSIGNAL, 1)
        // Offer every encoding this libcurl decodes (gzip, deflate, br, zstd) and decode it.
        setString(CURLOPT_ACCEPT_ENCODING, "")
        setLong(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // Redirects are followed by the operation, which lets users rewrite or refuse them.
        setLong(CURLOPT_FOLLOWLOCATION, 0)
        setLong(CURLOPT_TCP_KEEPALIVE, 1)
        // TLS 1.2 at least, as Docs/Security.md promises, whatever the policy: curl's default
        // lets OpenSSL's configuration decide, which may allow 1.0 and 1.1. A policy that asks
        // for 1.3 raises it (`configureSecurity`). Converted: libcurl 7.x's headers declare the
        // constants as `Int`, 8.x's as `Int32`.
        setLong(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2))
        setLong(CURLOPT_PROXY_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2))
        setLong(CURLOPT_LOW_SPEED_LIMIT, 1)
        // A proxy's answer to CONNECT is not the origin's response: keep it from the head
        // parser on every route, the default one included (curl reads https_proxy and
        // all_proxy from the environment itself). Its "200 Connection established" was taken
        // for the answer to a resume: the file was emptied and the real 206 written at 0.
        setLong(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        // http and https only, unless an operation allows more (`configureSecurity`).
        setString(CURLOPT_PROTOCOLS_STR, "http,https")
        setString(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        ccurl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { buffer, size, count, userData in
            Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
                .receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: size * count))
        }
        ccurl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { buffer, size, count, userData in
            Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
                .receiveBody(UnsafeRawBufferPointer(start: buffer, count: size * count))
        }
    }

    /// This transfer's own options. A plain transfer's set every option a plain transfer
    /// sets beyond ``configureShared()`` and its policy's, so none of the last one's values
    /// survives; on a handle `primed` under the same policy, the policy's are there already.
    func configure(waitsForMultiplexing: Bool, primed: Bool) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        setString(CURLOPT_URL, request.url.absoluteString)
        // https requests started together to one origin wait for the first connection and
        // become HTTP/2 streams on it, instead of each opening its own; not for plain http, nor
        // for origins known to answer over HTTP/1.x (HTTP1Origins says why).
        setLong(CURLOPT_PIPEWAIT, waitsForMultiplexing ? 1 : 0)
        ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me)
        ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me)

        // Idle timeout, as URLRequest.timeoutInterval means it: connecting, and then no byte
        // for that long. curl counts the stall in whole seconds. `request.timeout` is finite
        // and at most TransferRequest.longestTimeout, so both conversions are in range.
        setLong(CURLOPT_CONNECTTIMEOUT_MS, Int(request.timeout * 1000))
        setLong(CURLOPT_LOW_SPEED_TIME, max(1, Int(request.timeout.rounded(.up))))

        configureMethodAndBody(userData: me)
        configureHeaders()

        if let rate = request.maximumSendRate {
            ccurl_easy_setopt_off(easy, CURLOPT_MAX_SEND_SPEED_LARGE, curl_off_t(rate))
        }

        // A primed handle keeps its policy's options (``EasyHandlePool``).
        if !isPlain || !primed {
            configureSecurity()
        }
        // A plain transfer is a GET whose policy pins nothing and has no trust block: nothing
        // to check before its request goes out.
        if !isPlain, checksServerTrust || !request.isIdempotent {
            ccurl_easy_setopt_pointer(easy, CURLOPT_PREREQDATA, me)
            ccurl_easy_setopt_prereq_callback(easy) { userData, _, _, _, _ in
                Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue().preRequest()
            }
        }

        if !request.route.isDefault || request.proxyCredential != nil {
            configureRoute()
        }
        if let store = request.cookieStore {
            store.engine.value.attach(easy!)
        }

        if let credential = request.credential {
            setString(CURLOPT_USERNAME, credential.user)
            setString(CURLOPT_PASSWORD, credential.password)
            setLong(CURLOPT_HTTPAUTH, ccurl_auth_basic | ccurl_auth_digest)
        }
    }

    func configureMethodAndBody(userData: UnsafeMutableRawPointer) {
        let length: Int64?
        switch request.body {
        case .none where request.methodExpectsBody: length = 0
        case .none: length = nil
        case .data(let data): length = Int64(data.count)
        case .stream(_, let declared): length = declared ?? -1
        }

        switch (request.method, length) {
        case ("GET", nil):
            setLong(CURLOPT_HTTPGET, 1)
        case ("HEAD", nil):
            setLong(CURLOPT_NOBODY, 1)
        case (let method, nil):
            setString(CURLOPT_CUSTOMREQUEST, method)
        case (let method, let length?):
            // POST mode sends a body from the read callback; the method string is then
            // replaced for PUT, PATCH and the rest. -1 means chunked.
            setLong(CURLOPT_POST, 1)
            ccurl_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(length))
            if method != "POST" {
                setString(CURLOPT_CUSTOMREQUEST, method)
            }
            ccurl_easy_setopt_data_callback(easy, CURLOPT_READFUNCTION) { buffer, size, count, userData in
                Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
                    .readBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
            }
            ccurl_easy_setopt_pointer(easy, CURLOPT_READDATA, userData)
            ccurl_easy_setopt_seek_callback(easy) { userData, offset, origin in
                Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
                    .seekBody(to: offset, origin: origin)
            }
            ccurl_easy_setopt_pointer(easy, CURLOPT_SEEKDATA, userData)
            if case .stream(let handed, _) = request.body {
                let stream = handed.value
                bodyReader = makeBodyReader(for: stream)
                // A written body may wait for the response (full duplex); a read one is sent
                // whole whatever the server answered, as curl does (`CurlTransfer+ResponseEnd`).
                if stream is StreamedRequestBody { watchResponseEnd(userData: userData) }
                // A written body may give trailer fields when its closure returns.
                if length == -1, request.requestTrailers != nil || stream is StreamedRequestBody {
                    // Chunked: curl asks for the trailer section after the last chunk.
                    sendsTrailers = true
                    if request.requestTrailers != nil {
                        // libcurl sends request trailers only after a chunked HTTP/1.1 body:
                        // a request that asks for them up front goes over HTTP/1.1. (A written
                        // body's trailers are known only at its end: over HTTP/2 they fail the
                        // request, `trailersWentUnsent`.) It waits for no multiplexing
                        // connection, and its HTTP/1.1 connection closes after it, so that no
                        // request that could have had HTTP/2 reuses it. The handle is not
                        // pooled after trailers.
                        forcesHTTP1 = true
                        setLong(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
                        setLong(CURLOPT_PIPEWAIT, 0)
                        setLong(CURLOPT_FORBID_REUSE, 1)
                    }
                    ccurl_easy_setopt_trailer_callback(easy) { list, userData in
                        Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue().appendTrailers(to: list!)
                    }
                    ccurl_easy_setopt_pointer(easy, CURLOPT_TRAILERDATA, userData)
                }
            }
        }
    }

    /// A reader for `stream` whose news of data unpauses this transfer, if it still runs.
    func makeBodyReader(for stream: InputStream) -> BodyReader {
        // Made and found again on the network thread, where transfers live; the reader's
        // queue only carries it there.
        assert(NetworkThread.shared.isCurrentThread, "a transfer makes its body reader on the network thread")
        let transfer = ThreadConfined(reachedOnlyFrom: WeakReference(object: self))
        return BodyReader(stream: stream, queue: request.bodyQueue ?? DispatchQueue(label: "HTTPOperations.reader"),
                          rewindFirst: request.rewindsBody, trailers: request.requestTrailers) {
            NetworkThread.shared.perform {
                guard let transfer = transfer.withValue({ $0.object }), transfer.easy != nil else { return }
                NetworkThread.shared.multi.unpause(transfer)
            }
        }
    }

    func configureHeaders() {
        for (name, value) in request.headers {
            // "Name: " would tell curl to leave the field out; "Name;" sends it empty.
            headerList = curl_slist_append(headerList, value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        // curl adds these on its own to a body it sends in POST mode (its form type even to an
        // empty one). Send only what the caller asked for: "Name:" with no value tells curl to
        // leave the field out. A request without a body needs neither line (two allocations
        // each, and two more fields curl compares against every one it looks for).
        if !request.body.isNone || request.methodExpectsBody {
            if request.header("Content-Type") == nil { headerList = curl_slist_append(headerList, "Content-Type:") }
            if request.header("Expect") == nil { headerList = curl_slist_append(headerList, "Expect:") }
        }
        ccurl_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, headerList)
    }

    func setLong(_ option: CURLoption, _ value: Int) {
        ccurl_easy_setopt_long(easy, option, value)
    }

    func setString(_ option: CURLoption, _ value: String?) {
        ccurl_easy_setopt_string(easy, option, value)
    }
}
