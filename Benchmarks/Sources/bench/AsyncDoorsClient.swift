import Foundation
import HTTPOperations
import HTTPTypes

/// HTTPOperations through its async doors, `inFlight` requests at a time in a task group (as
/// AsyncHTTPClient is driven): a request built by the manager's request serializer, awaited with
/// `try await manager.run(operation, as: Data?.self)` (the typed async door for operations), or
/// `try await manager.perform(HTTPRequest)` (the HTTPTypes door). Bodies are collected in
/// memory; a file workload writes each body to the file after it arrived.
enum AsyncDoorsClient {
    enum Door { case asyncVerb, httpTypes }

    static func run(_ workload: Workload, door: Door) -> Tally {
        let manager = OperationsClient.manager(workload)
        return TaskGroupDriver.run(workload) { await fetch(manager, workload, door) }
    }

    /// One GET; the body's length, or nil when it failed.
    private static func fetch(_ manager: HTTPRequestOperationManager, _ workload: Workload, _ door: Door) async -> Int64? {
        do {
            let body: Data
            switch door {
            case .asyncVerb:
                // Built by the request serializer from the string, as the verbs build theirs
                // (default header fields included), then awaited typed.
                let request = try manager.requestSerializer.request(method: "GET", urlString: workload.url.absoluteString,
                                                                    parameters: nil)
                let operation = manager.httpRequestOperation(with: request, success: nil, failure: nil)
                body = try await manager.run(operation, as: Data?.self) ?? Data()
            case .httpTypes:
                let (response, data) = try await manager.perform(workload.httpRequest)
                guard response.status == .ok else { return nil }
                body = data
            }
            if let path = workload.file { try body.write(to: URL(fileURLWithPath: path)) }
            return Int64(body.count)
        } catch {
            return nil
        }
    }
}
