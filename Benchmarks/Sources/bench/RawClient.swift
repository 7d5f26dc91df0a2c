import CRawCurl

/// The physical limit: a plain libcurl multi loop in C with HTTPOperations' options.
enum RawClient {
    /// `reusingBuffers`: each slot keeps its body buffer for the next body (the limit for
    /// bodies in memory); otherwise every body gets a fresh buffer, as a client's user gets a
    /// new body per response.
    static func run(_ workload: Workload, reusingBuffers: Bool = false) -> Tally {
        let result = raw_curl_run(workload.url.absoluteString, workload.count, workload.inFlight, workload.file,
                                  reusingBuffers ? 1 : 0, workload.caFile, workload.multiplex ? 1 : 0)
        return Tally(completed: result.completed, failed: result.failed, bytes: result.body_bytes)
    }
}
