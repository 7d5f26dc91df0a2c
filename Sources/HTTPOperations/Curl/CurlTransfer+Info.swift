import CCurl

/// What curl knows of a transfer once it answered, read with `curl_easy_getinfo` while the
/// transfer still has its easy handle. Network thread only.
extension CurlTransfer {
    /// Nine `curl_easy_getinfo` calls: nothing is measured here, curl keeps the times.
    func readTimings() -> TransferTimings.Transfer? {
        guard let easy else { return nil }
        func duration(_ info: CURLINFO) -> Duration {
            var microseconds: curl_off_t = 0
            return ccurl_easy_getinfo_off(easy, info, &microseconds) == CURLE_OK ? .microseconds(microseconds) : .zero
        }
        func count(_ info: CURLINFO) -> Int64 {
            var bytes: curl_off_t = 0
            return ccurl_easy_getinfo_off(easy, info, &bytes) == CURLE_OK ? Int64(bytes) : 0
        }
        var connects = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        var version = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        let httpVersion: String? = switch version {
        case Int(CURL_HTTP_VERSION_1_0): "1.0"
        case Int(CURL_HTTP_VERSION_1_1): "1.1"
        case Int(CURL_HTTP_VERSION_2_0): "2"
        case Int(CURL_HTTP_VERSION_3): "3"
        default: nil
        }
        return TransferTimings.Transfer(
            nameLookup: duration(CURLINFO_NAMELOOKUP_TIME_T), connect: duration(CURLINFO_CONNECT_TIME_T),
            tlsHandshake: duration(CURLINFO_APPCONNECT_TIME_T), requestSent: duration(CURLINFO_PRETRANSFER_TIME_T),
            firstByte: duration(CURLINFO_STARTTRANSFER_TIME_T), total: duration(CURLINFO_TOTAL_TIME_T),
            reusedConnection: connects == 0, httpVersion: httpVersion,
            bytesSent: count(CURLINFO_SIZE_UPLOAD_T), bytesReceived: count(CURLINFO_SIZE_DOWNLOAD_T))
    }

    /// The absolute URL a 3xx response points to, as curl resolved its `Location`.
    var redirectURL: String? {
        var value: UnsafeMutablePointer<CChar>?
        guard let easy, ccurl_easy_getinfo_string(easy, CURLINFO_REDIRECT_URL, &value) == CURLE_OK, let value else {
            return nil
        }
        return String(cString: value)
    }

    /// The length of the download as the server announced it, if it did.
    var expectedContentLength: Int64? {
        var value: curl_off_t = -1
        guard let easy, ccurl_easy_getinfo_off(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &value) == CURLE_OK, value >= 0 else {
            return nil
        }
        return Int64(value)
    }
}
