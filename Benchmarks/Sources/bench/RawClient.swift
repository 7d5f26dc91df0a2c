import CRawCurl
import Foundation

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

    /// POSTs: the JSON's encoded bytes (encoded once: the floor for any client that encodes per
    /// request), or the file read as curl asks.
    static func upload(_ workload: Workload, _ upload: UploadBody) -> Tally {
        let json: String? = if case .json = upload { String(decoding: (try? UploadBody.encodedJSON()) ?? Data(), as: UTF8.self) } else { nil }
        let path: String? = if case .file(let path) = upload { path } else { nil }
        let result = raw_curl_upload(workload.url.absoluteString, workload.count, workload.inFlight, json, path, workload.caFile)
        return Tally(completed: result.completed, failed: result.failed, bytes: result.body_bytes)
    }
}
