import CCurl

/// How ``CurlMulti`` hands over what curl finished: transfers curl completed, and those whose
/// response ended while their request body was still open (see `CurlTransfer+ResponseEnd.swift`).
/// Network thread only, as the rest of the type.
extension CurlMulti {
    /// After a pass over curl: completes what curl finished, then what ended first.
    func deliverCompletions() {
        callbacks.collect {
            readCompletions()
            if !endedFirst.isEmpty { endTransfersWhoseResponseEnded() }
        }
    }

    /// Completes, as successes, the transfers whose response is complete while their request
    /// body is still open (curl would wait for the body for ever), and takes them off curl,
    /// which closes their connection. One whose received bytes curl still holds waits for its
    /// unpause; one that curl completed itself meanwhile was completed by ``readCompletions()``.
    func endTransfersWhoseResponseEnded() {
        let candidates = endedFirst
        endedFirst.removeAll()
        for transfer in candidates {
            guard let easy = transfer.easy, active[easy] === transfer else { continue }
            guard transfer.shouldEndAfterResponse else {
                endedFirst.append(transfer)
                continue
            }
            end(transfer, easy: easy, with: CURLE_OK)
        }
    }

    /// Takes `transfer` off curl mid-send (its connection closes) and completes it with `code`.
    func end(_ transfer: CurlTransfer, easy: UnsafeMutableRawPointer, with code: CURLcode) {
        active[easy] = nil
        transfer.endedAfterResponse = true
        curl_multi_remove_handle(handle, easy)
        transfer.complete(with: code, message: nil)
        recycleHandle(of: transfer)
    }

    private func readCompletions() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(handle, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            // `message` is invalid once the handle is removed: everything is read above.
            curl_multi_remove_handle(handle, easy)
            if let transfer = active.removeValue(forKey: easy) {
                // The handle stays with the transfer through `complete`, which may read it
                // (the redirect target, the announced length).
                transfer.complete(with: code, message: nil)
                if !transfer.forcesHTTP1 {
                    http1Origins.learn(transfer.origin, httpVersion: transfer.timings?.httpVersion)
                }
                recycleHandle(of: transfer)
            }
        }
    }
}
