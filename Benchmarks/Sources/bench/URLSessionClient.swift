import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// URLSession from FoundationNetworking, with `inFlight` tasks at a time.
enum URLSessionClient {
    static func run(_ workload: Workload) -> Tally {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = workload.inFlight
        let session = URLSession(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let slots = DispatchSemaphore(value: workload.inFlight)
        let counter = OperationsClient.Counter(total: workload.count)
        for _ in 0..<workload.count {
            slots.wait()
            if let path = workload.file {
                session.downloadTask(with: workload.url) { location, response, error in
                    var bytes: Int64 = 0
                    if let location, error == nil {
                        try? FileManager.default.removeItem(atPath: path)
                        try? FileManager.default.moveItem(at: location, to: URL(fileURLWithPath: path))
                        bytes = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64) ?? 0
                    }
                    counter.record(ok: error == nil && (response as? HTTPURLResponse)?.statusCode == 200, bytes: bytes)
                    slots.signal()
                }.resume()
            } else {
                session.dataTask(with: workload.url) { data, response, error in
                    counter.record(ok: error == nil && (response as? HTTPURLResponse)?.statusCode == 200, bytes: Int64(data?.count ?? 0))
                    slots.signal()
                }.resume()
            }
        }
        return counter.wait()
    }
}
