import CCurl

/// A response that ends while its request body is still open.
///
/// libcurl ends an HTTP/1.1 transfer only once both directions are done, so a duplex exchange
/// whose caller ends its request body only after the response ended would wait for ever.
/// A transfer with a written body (``StreamedRequestBody``: it may wait for the response)
/// watches the raw bytes of its response (``ResponseEndWatch``,
/// fed by curl's debug callback) and, once the response is complete with the body still open,
/// tells ``CurlMulti``, which completes it as a success outside curl's callbacks and takes it
/// off its connection (closed: the request on it never ended). The body's writer is then told
/// to stop (``BodyReader/stop()``: its task is cancelled, its next write throws).
///
/// Bodies of `Data` and bodies read from an `InputStream` are sent whole, as curl sends them
/// (a server may acknowledge first and read the upload after): they wait for no answer. Nor
/// does HTTP/2 need this: curl 8 stops sending once a stream's response has ended.
extension CurlTransfer {
    /// Turns on curl's debug callback, which shows the response's raw bytes: for written
    /// bodies only (curl formats its informational texts for it too).
    func watchResponseEnd(userData: UnsafeMutableRawPointer) {
        watchesResponseEnd = true
        setLong(CURLOPT_VERBOSE, 1)
        ccurl_easy_setopt_debug_callback(easy) { _, type, data, size, userData in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
            if type == CURLINFO_DATA_IN, let data {
                transfer.received(rawBody: UnsafeRawBufferPointer(start: data, count: size))
            }
            return 0
        }
        ccurl_easy_setopt_pointer(easy, CURLOPT_DEBUGDATA, userData)
    }

    /// A final response head was accepted: watch its body, if its end is for us to see.
    func watchBody(of head: ResponseHead) {
        endWatch = ResponseEndWatch(head: head, method: request.method)
        noteIfEndedFirst()
    }

    /// Whether ``CurlMulti`` should end this transfer now: its response is complete and curl
    /// holds none of its bytes back. Asked after a pass in which curl did not complete it, so
    /// its request is still going out: the writer may still be writing, or its last bytes wait
    /// in curl for a server that no longer reads.
    var shouldEndAfterResponse: Bool {
        responseEndedFirst && !holdsReceivedBody
    }

    private func received(rawBody bytes: UnsafeRawBufferPointer) {
        guard endWatch != nil else { return }
        endWatch!.consume(bytes)
        noteIfEndedFirst()
    }

    private func noteIfEndedFirst() {
        guard !responseEndedFirst, endWatch?.isComplete == true else { return }
        responseEndedFirst = true
        onResponseEndedFirst?(self)
    }
}
