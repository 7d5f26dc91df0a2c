import AsyncHTTPClient
import Foundation
import HTTPOperations
import NIOCore
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an upload workload sends, by POST, to Benchmarks' `uploadsink` (which answers once it
/// holds the whole body).
enum UploadBody: Sendable {
    /// A small JSON object, encoded for each request as each client's user encodes it
    /// (HTTPOperations: the manager's JSON request serializer; URLSession and AsyncHTTPClient:
    /// `JSONSerialization`, the same encoder; raw libcurl: the encoded bytes, once).
    case json
    /// The file at this path, read from disk as it is sent.
    case file(String)

    /// The JSON object's fields.
    nonisolated(unsafe) static let parameters: [String: Any] = ["name": "HTTPOperations", "count": 12_345, "ok": true, "tags": ["a", "b"]]

    /// The object encoded, as every client sends it.
    static func encodedJSON() throws -> Data { try JSONSerialization.data(withJSONObject: parameters) }

    /// The file's size, for its `Content-Length`.
    static func size(of path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}

/// The upload workloads' clients: `inFlight` POSTs at a time, each counted when its answer
/// is a 200.
enum UploadClients {
    /// HTTPOperations: operations whose requests the manager's JSON request serializer builds
    /// (or, for a file, a request whose `httpBodyStream` reads it), through the manager.
    ///
    /// - Parameter encodedOnce: Build the request once and send it `count` times, as raw
    ///   libcurl sends bytes encoded once: what a POST costs the model without the encoder.
    static func operations(_ workload: Workload, _ upload: UploadBody, encodedOnce: Bool = false) throws -> Tally {
        let manager = jsonManager(workload)
        let counter = OperationsClient.Counter(total: workload.count)
        let built = encodedOnce ? try request(manager, workload, upload) : nil
        for _ in 0..<workload.count {
            let operation = manager.httpRequestOperation(with: try built ?? request(manager, workload, upload), success: { _, object in
                counter.record(ok: true, bytes: Int64((object as? Data)?.count ?? 0))
            }, failure: { _, _ in counter.record(ok: false, bytes: 0) })
            manager.enqueue(operation)
        }
        return counter.wait()
    }

    /// The manager's JSON request serializer alone, `count` times, no I/O: what building a
    /// JSON POST costs (`Foundation.JSONSerialization` most of it).
    static func serializeOnly(_ workload: Workload) throws -> Tally {
        let manager = jsonManager(workload)
        var tally = Tally()
        for _ in 0..<workload.count {
            let request = try request(manager, workload, .json)
            tally.completed += 1
            tally.bytes += Int64(request.httpBody?.count ?? 0)
        }
        return tally
    }

    /// HTTPOperations' callback verb, `manager.post(_:parameters:success:failure:)` (JSON only).
    static func verbs(_ workload: Workload) -> Tally {
        let manager = jsonManager(workload)
        let counter = OperationsClient.Counter(total: workload.count)
        let urlString = workload.url.absoluteString
        for _ in 0..<workload.count {
            manager.post(urlString, parameters: UploadBody.parameters, success: { _, object in
                counter.record(ok: true, bytes: Int64((object as? Data)?.count ?? 0))
            }, failure: { _, _ in counter.record(ok: false, bytes: 0) })
        }
        return counter.wait()
    }

    /// HTTPOperations' typed async door, `try await manager.run(_:as:)`, `inFlight` at a time.
    static func async(_ workload: Workload, _ upload: UploadBody) -> Tally {
        let manager = jsonManager(workload)
        return TaskGroupDriver.run(workload) {
            do {
                let operation = manager.httpRequestOperation(with: try request(manager, workload, upload), success: nil, failure: nil)
                return Int64(try await manager.run(operation, as: Data?.self)?.count ?? 0)
            } catch {
                return nil
            }
        }
    }

    /// URLSession: a data task with the JSON as its body, or an upload task from the file.
    static func urlSession(_ workload: Workload, _ upload: UploadBody) throws -> Tally {
        let session = URLSessionClient.session(workload)
        let slots = DispatchSemaphore(value: workload.inFlight)
        let counter = OperationsClient.Counter(total: workload.count)
        for _ in 0..<workload.count {
            slots.wait()
            var request = URLRequest(url: workload.url)
            request.httpMethod = "POST"
            let completion: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
                counter.record(ok: error == nil && (response as? HTTPURLResponse)?.statusCode == 200, bytes: Int64(data?.count ?? 0))
                slots.signal()
            }
            switch upload {
            case .json:
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = try UploadBody.encodedJSON()
                session.dataTask(with: request, completionHandler: completion).resume()
            case .file(let path):
                session.uploadTask(with: request, fromFile: URL(fileURLWithPath: path), completionHandler: completion).resume()
            }
        }
        return counter.wait()
    }

    /// AsyncHTTPClient: the JSON as bytes, or the file as a stream of 64 KiB chunks read with
    /// `FileHandle`, `inFlight` at a time.
    static func asyncHTTPClient(_ workload: Workload, _ upload: UploadBody) throws -> Tally {
        let client = AsyncHTTPClientBench.client(workload)
        return TaskGroupDriver.run(workload) {
            do {
                var request = HTTPClientRequest(url: workload.url.absoluteString)
                request.method = .POST
                switch upload {
                case .json:
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(bytes: try UploadBody.encodedJSON()))
                case .file(let path):
                    request.body = .stream(FileChunks(path: path), length: .known(UploadBody.size(of: path)))
                }
                let response = try await client.execute(request, timeout: .seconds(600))
                let body = try await response.body.collect(upTo: 1 << 20)
                return response.status == .ok ? Int64(body.readableBytes) : nil
            } catch {
                return nil
            }
        }
    }

    private static func jsonManager(_ workload: Workload) -> HTTPRequestOperationManager {
        let manager = OperationsClient.manager(workload)
        manager.requestSerializer = HTTPRequestSerializer(bodyEncoding: .json())
        return manager
    }

    /// The POST: built by the manager's serializer from the parameters, or read from the file
    /// (`httpBodyStream`, with its `Content-Length`).
    private static func request(_ manager: HTTPRequestOperationManager, _ workload: Workload,
                                _ upload: UploadBody) throws -> URLRequest {
        switch upload {
        case .json:
            return try manager.requestSerializer.request(method: "POST", urlString: workload.url.absoluteString,
                                                         parameters: UploadBody.parameters)
        case .file(let path):
            var request = URLRequest(url: workload.url)
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(fileAtPath: path)
            request.setValue(String(UploadBody.size(of: path)), forHTTPHeaderField: "Content-Length")
            return request
        }
    }
}

/// A file as an async sequence of 64 KiB `ByteBuffer`s, read with `FileHandle`.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let path: String

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        mutating func next() async throws -> ByteBuffer? {
            guard let handle, let data = try handle.read(upToCount: 1 << 16), !data.isEmpty else {
                try handle?.close()
                return nil
            }
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: FileHandle(forReadingAtPath: path)) }
}

/// Runs `workload.count` calls of `fetch`, `inFlight` at a time in a task group, and counts
/// them (a nil is a failure).
enum TaskGroupDriver {
    static func run(_ workload: Workload, _ fetch: @escaping @Sendable () async -> Int64?) -> Tally {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex(Tally())
        Task {
            let tally = await withTaskGroup(of: Int64?.self) { group -> Tally in
                var tally = Tally()
                var started = 0
                while started < min(workload.inFlight, workload.count) {
                    started += 1
                    group.addTask(operation: fetch)
                }
                for await bytes in group {
                    if let bytes { tally.completed += 1; tally.bytes += bytes } else { tally.failed += 1 }
                    if started < workload.count {
                        started += 1
                        group.addTask(operation: fetch)
                    }
                }
                return tally
            }
            result.withLock { $0 = tally }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }
}
