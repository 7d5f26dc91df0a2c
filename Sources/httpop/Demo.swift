import ArgumentParser
import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization

/// `httpop demo`: the operation model, shown against the embedded test server.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the embedded server on a free loopback port and show the operation model at work."
    )

    @Option(help: "Size of the demo download, in MiB.")
    var downloadMiB = 64

    func run() throws {
        let server = try TestServer.start()
        defer { server.shutdown() }
        let log = DemoLog()
        say("Embedded test server listening on \(server.baseURL.absoluteString)\n")

        try chain(server, log)
        try parallel(server, log)
        try failures(server, log)
        try download(server, log)
        try events(server)
        try upload(server)
        say("\nDone: every operation reported exactly once, on its completion queue.")
    }

    /// A chain through the manager: log in, then fetch with the token from the login
    /// response, then fetch something else; each request is built when the one before has
    /// answered. Operations are made and configured first, then enqueued.
    private func chain(_ server: TestServer, _ log: DemoLog) throws {
        say("1. A chain of dependent requests through the manager (up to 4 at once)")
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.operationQueue.maxConcurrentOperationCount = 4
        let finished = DispatchSemaphore(value: 0)

        let loginRequest = try manager.requestSerializer.request(method: "POST", urlString: server.url(.echo).absoluteString,
                                                                 parameters: ["token": "t0k3n"])
        let login = manager.httpRequestOperation(with: loginRequest, success: nil, failure: nil)
        log.watch(login, name: "log in")
        let profile = DependentRequestOperation(dependencies: [login]) { dependencies in
            let echo = (dependencies[0] as? HTTPRequestOperation)?.responseObject as? [String: Any]
            let token = ((echo?["body"] as? String) ?? "").replacingOccurrences(of: "token=", with: "")
            var request = URLRequest(url: server.url(.echo))
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            return request
        }
        profile.responseSerializer = JSONResponseSerializer()
        log.watch(profile, name: "fetch profile (with the token)")
        let avatar = DependentRequestOperation(dependencies: [profile]) { _ in URLRequest(url: server.url(.delay(milliseconds: 50))) }
        log.watch(avatar, name: "fetch avatar", then: { finished.signal() })

        // Enqueued last first: the dependencies, not the order, decide when each runs.
        [avatar, profile, login].forEach(manager.enqueue)
        finished.wait()
        let sent = (profile.responseObject as? [String: Any])?["headers"] as? [String: String]
        say("   the profile request carried: Authorization: \(sent?["authorization"] ?? "(none)")\n")
    }

    private func parallel(_ server: TestServer, _ log: DemoLog) throws {
        say("2. A batch of twenty requests, with progress, over reused keep-alive connections")
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.operationQueue.maxConcurrentOperationCount = 20
        let started = Date()
        let done = DispatchSemaphore(value: 0)
        let operations = (0..<20).map { index in
            manager.httpRequestOperation(with: URLRequest(url: server.url(.bytes(1000 + index))), success: nil, failure: nil)
        }
        operations.forEach { $0.responseSerializer = HTTPResponseSerializer() }
        manager.enqueueBatch(of: operations, progress: { finished, total in
            if finished % 5 == 0 { say("   \(finished) of \(total) finished") }
        }, completion: { operations in
            let succeeded = operations.enumerated().filter { $1.error == nil && $1.responseData?.count == 1000 + $0 }.count
            say("   \(succeeded) of 20 succeeded, with the right bodies, in \(log.milliseconds(since: started)) ms\n")
            done.signal()
        })
        done.wait()
    }

    private func failures(_ server: TestServer, _ log: DemoLog) throws {
        say("3. Failures are typed, and cancellation is a failure, never a success")
        let missing = HTTPRequestOperation(request: URLRequest(url: server.url(.status(404))))
        missing.start()
        missing.waitUntilFinished()
        say("   GET /status/404  → \(missing.error.map { "\($0)" } ?? "no error?")")

        let slow = HTTPRequestOperation(request: URLRequest(url: server.url(.delay(milliseconds: 5000))))
        slow.start()
        slow.cancel()
        slow.waitUntilFinished()
        say("   cancelled GET    → URLError \((slow.error as? URLError)?.code.name ?? "none")")

        var request = URLRequest(url: server.url(.delay(milliseconds: 3000)))
        request.timeoutInterval = 1
        let timedOut = HTTPRequestOperation(request: request)
        timedOut.start()
        timedOut.waitUntilFinished()
        say("   1 s timeout      → URLError \((timedOut.error as? URLError)?.code.name ?? "none"), curl said: \((timedOut.error as? URLError)?.curlError?.message ?? "-")\n")
    }

    private func download(_ server: TestServer, _ log: DemoLog) throws {
        let size = downloadMiB << 20
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-demo-\(getpid()).bin").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        say("4. Streaming a \(downloadMiB) MiB body to \(path)")
        let operation = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(size))))
        operation.outputStream = OutputStream(toFileAtPath: path, append: false)
        let display = ProgressDisplay(label: "   download")
        operation.setDownloadProgressBlock { _, total, expected in display.update(total: total, expected: expected) }
        operation.start()
        operation.waitUntilFinished()
        let written = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64) ?? 0
        display.finish(total: written, succeeded: operation.error == nil)
        let verified = try verify(path: path, size: size)
        say("   \(verified ? "verified: every byte in place" : "MISMATCH in the downloaded bytes")")
        if !verified { throw CommandFailure("error: the demo download does not match what the server sent") }
    }

    /// An event stream whose connection the server cuts twice, mid-event: each event arrives
    /// once, in order, and each reconnection names the last event delivered.
    private func events(_ server: TestServer) throws {
        say("\n5. A Server-Sent Events stream cut twice mid-event, resumed with Last-Event-ID")
        var feed = EventFeed()
        feed.count = 8
        feed.connections = [.cut(bytes: 80), .cut(bytes: 50)]
        let key = "demo-\(getpid())"
        let operation = EventStreamOperation(request: URLRequest(url: server.url(.events(key: key, feed: feed))))
        let ids = Mutex<[String]>([])
        operation.setEventHandler { _, event in ids.withLock { $0.append(event.lastEventID) } }
        operation.start()
        operation.waitUntilFinished()
        let sent = server.lastEventIDs(forEventFeed: key).map { $0 ?? "-" }
        say("   events \(ids.withLock { $0 }.joined(separator: ", ")) over \(operation.connectionCount) connections; "
            + "Last-Event-ID sent: \(sent.joined(separator: ", ")); \(operation.error.map { "error \($0)" } ?? "ended by the server's 204")")
        if let error = operation.error { throw CommandFailure(error) }
    }

    /// A tus upload whose connection the server drops mid-append and whose offset it is asked
    /// for after: the server ends with the file's bytes, exactly.
    private func upload(_ server: TestServer) throws {
        say("\n6. A resumable upload (tus 1.0) dropped mid-append, resumed from the server's offset")
        let size = 1 << 20
        let content = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
        let collection = "demo-\(getpid())"
        server.uploads.configure(collection, faults: [3: .dropAfter(bytes: 100_000)])
        var configuration = UploadConfiguration()
        configuration.chunkSize = 256 << 10
        configuration.retryDelay = .milliseconds(20)
        let creation = server.baseURL.appendingPathComponent("tus").appendingPathComponent(collection)
        let operation = ResumableUploadOperation(request: URLRequest(url: creation), source: .data(content), configuration: configuration)
        operation.start()
        operation.waitUntilFinished()
        let held = operation.uploadURL.flatMap { server.uploads.upload(at: $0) }?.bytes
        say("   requests: \(server.uploads.log(of: collection).joined(separator: ", "))")
        say("   \(held == content ? "the server holds the file's \(size) bytes exactly" : "MISMATCH in the uploaded bytes")")
        if let error = operation.error { throw CommandFailure(error) }
        if held != content { throw CommandFailure("error: the demo upload does not match what was sent") }
    }

    /// Compares the file with the server's pattern, a megabyte at a time.
    private func verify(path: String, size: Int) throws -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        var offset = 0
        while offset < size {
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty || chunk != TestServer.pattern(offset: offset, count: chunk.count) { return false }
            offset += chunk.count
        }
        return offset == size
    }
}

/// Prints each operation's start and finish with the time since the demo began.
final class DemoLog: Sendable {
    private let start = Date()
    private let names = Mutex<[ObjectIdentifier: String]>([:])

    init() {
        // Lives as long as the process: the demo never stops observing.
        _ = NotificationCenter.default.addObserver(forName: .networkingOperationDidStart, object: nil, queue: nil) { [self] note in
            guard let operation = note.object as? HTTPRequestOperation,
                  let name = names.withLock({ $0[ObjectIdentifier(operation)] }) else { return }
            say("   [\(String(format: "%4d", milliseconds(since: start))) ms] start   \(name)  \(operation.currentRequest.httpMethod ?? "GET") \(operation.currentRequest.url?.path ?? "")")
        }
    }

    /// Names `operation` in the log, prints its outcome, then runs `then`.
    func watch(_ operation: HTTPRequestOperation, name: String, then: (@Sendable () -> Void)? = nil) {
        names.withLock { $0[ObjectIdentifier(operation)] = name }
        operation.setCompletionBlockWithSuccess({ [self] operation, _ in
            names.withLock { $0[ObjectIdentifier(operation)] = nil }
            say("   [\(String(format: "%4d", milliseconds(since: start))) ms] success \(name)  \(operation.response?.statusCode ?? 0), \(operation.responseData?.count ?? 0) bytes")
            then?()
        }, failure: { [self] operation, error in
            names.withLock { $0[ObjectIdentifier(operation)] = nil }
            say("   [\(String(format: "%4d", milliseconds(since: start))) ms] failure \(name)  \(error)")
            then?()
        })
    }

    func milliseconds(since date: Date) -> Int {
        Int(Date().timeIntervalSince(date) * 1000)
    }
}

/// Writes a line to stdout at once, so it keeps its place among the progress lines on stderr
/// even when stdout is a pipe.
func say(_ line: String = "") {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
