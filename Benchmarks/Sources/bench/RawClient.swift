import CRawCurl

/// The physical limit: a plain libcurl multi loop in C with HTTPOperations' options.
enum RawClient {
    static func run(_ workload: Workload) -> Tally {
        let result = raw_curl_run(workload.url.absoluteString, workload.count, workload.inFlight, workload.file)
        return Tally(completed: result.completed, failed: result.failed, bytes: result.body_bytes)
    }
}
