import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// URLSession from FoundationNetworking, with `inFlight` tasks at a time.
enum URLSessionClient {
    /// An ephemeral session with `inFlight` connections per host, never invalidated nor
    /// released: FoundationNetworking on Linux now and then crashes while tearing down its
    /// multi handle after the last task ("_MultiHandle deallocated with non-zero retain count",
    /// then SIGABRT, SIGILL or SIGSEGV; more often over TLS), which would lose a measurement
    /// already made. The process ends right after the measurement anyway.
    static func session(_ workload: Workload) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = workload.inFlight
        let session = URLSession(configuration: configuration)
        kept.withLock { $0.append(session) }
        return session
    }

    private static let kept = Mutex<[URLSession]>([])

    static func run(_ workload: Workload) -> Tally {
        let session = session(workload)
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
