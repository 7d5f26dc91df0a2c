import Foundation
import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    @Suite struct Manager {
        private func manager() -> HTTPRequestOperationManager {
            HTTPRequestOperationManager(baseURL: testServer.baseURL)
        }

        @Test(arguments: [
            ("http://a.test/v1", "users", "http://a.test/v1/users"),
            ("http://a.test/v1/", "users", "http://a.test/v1/users"),
            ("http://a.test/v1", "/users", "http://a.test/users"),
            ("http://a.test/v1", "users?page=2", "http://a.test/v1/users?page=2"),
            ("http://a.test/v1", "../v2/users", "http://a.test/v2/users"),
            ("http://a.test/v1", "https://b.test/x", "https://b.test/x"),
            ("http://a.test", "users", "http://a.test/users"),
        ])
        func relativeURLsResolveAgainstTheBase(base: String, path: String, expected: String) throws {
            #expect(try HTTPRequestOperationManager(baseURL: URL(string: base)).url(for: path).absoluteString == expected)
        }

        @Test func withoutABaseOnlyAbsoluteURLsWork() throws {
            let manager = HTTPRequestOperationManager()
            #expect(try manager.url(for: "http://a.test/x").absoluteString == "http://a.test/x")
            #expect(throws: RequestSerializationError.self) { try manager.url(for: "relative/path") }
        }

        @Test func manyRequestsReuseTheirConnections() async throws {
            // A server of its own, so that only this test's connections are counted.
            let server = try TestServer.start()
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
            let inFlight = 16
            manager.operationQueue.maxConcurrentOperationCount = inFlight
            let recorder = OutcomeRecorder()
            let count = 5_000
            for _ in 0..<count {
                let operation = HTTPRequestOperation(request: URLRequest(url: server.url(.status(200))))
                recorder.watch(operation)
                manager.enqueue(operation)
            }
            try await recorder.done.wait(times: count, timeout: .seconds(60))
            #expect(recorder.all.allSatisfy { $0.error == nil })
            // One connection per request in flight, and a little room for connections that
            // other tests' transfers pushed out of the shared cache meanwhile. (When curl's
            // cache shrank with the transfers in it, this opened 22-27 connections.)
            #expect(server.acceptedConnections <= inFlight + 4, "\(server.acceptedConnections) connections")
        }

        @Test(arguments: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])
        func eachVerbPutsParametersWhereTheSerializerSays(method: String) async throws {
            let manager = manager()
            let done = TestSignal("verb")
            let result = Mutex<(HTTPRequestOperation?, String?)>((nil, nil))
            let success: HTTPRequestOperationManager.Success = { operation, object in
                let echoedMethod = (object as? [String: Any])?["method"] as? String
                result.withLock { $0 = (operation, echoedMethod) }
                done.fire()
            }
            let failure: HTTPRequestOperationManager.Failure = { _, error in
                Issue.record("\(method) failed: \(error)")
                done.fire()
            }
            let parameters = ["name": "ada lovelace"]
            let operation: HTTPRequestOperation? = switch method {
            case "GET": manager.get("echo", parameters: parameters, success: success, failure: failure)
            case "HEAD": manager.head("echo", parameters: parameters, success: { success($0, nil) }, failure: failure)
            case "POST": manager.post("echo", parameters: parameters, success: success, failure: failure)
            case "PUT": manager.put("echo", parameters: parameters, success: success, failure: failure)
            case "PATCH": manager.patch("echo", parameters: parameters, success: success, failure: failure)
            default: manager.delete("echo", parameters: parameters, success: success, failure: failure)
            }
            #expect(operation != nil)
            try await done.wait()
            let (op, echoedMethod) = result.withLock { $0 }
            #expect(op?.currentRequest.httpMethod == method)
            if ["GET", "HEAD", "DELETE"].contains(method) {
                #expect(op?.currentRequest.url?.query == "name=ada%20lovelace")
            } else {
                #expect(op?.currentRequest.httpBody == Data("name=ada%20lovelace".utf8))
            }
            if method != "HEAD" {
                #expect(echoedMethod == method)
            }
        }

        @Test func aRequestTheSerializerCannotBuildFailsWithoutAnOperation() async throws {
            let done = TestSignal("failure")
            let failed = Mutex<(Bool, Bool)>((false, false))
            let operation = manager().get("http://[::1", parameters: nil, success: { _, _ in
                Issue.record("no success expected")
            }, failure: { operation, error in
                failed.withLock { $0 = (operation == nil, error is RequestSerializationError) }
                done.fire()
            })
            #expect(operation == nil)
            try await done.wait()
            #expect(failed.withLock { $0 } == (true, true))
        }

        final class TracingOperation: HTTPRequestOperation, @unchecked Sendable {}

        @Test func theManagerMakesOperationsOfTheClassItIsTold() async throws {
            let manager = manager()
            manager.operationFactory = { TracingOperation(request: $0) }
            let done = TestSignal("subclass")
            let operation = manager.get("bytes/10", success: { _, _ in done.fire() }, failure: { _, _ in done.fire() })
            #expect(operation is TracingOperation)
            try await done.wait()
        }

        @Test func aBatchReportsProgressAndCompletesAfterEveryBlock() async throws {
            let manager = manager()
            manager.responseSerializer = HTTPResponseSerializer()
            let blocksRun = Mutex(0)
            let progress = Mutex<[Int]>([])
            let completion = TestSignal("batch completion")
            let seenAtCompletion = Mutex<(blocks: Int, progress: [Int])>((0, []))
            let operations = (0..<12).map { index in
                let operation = manager.httpRequestOperation(
                    with: URLRequest(url: testServer.url(index % 3 == 0 ? .status(500) : .bytes(100 + index))),
                    success: { _, _ in blocksRun.withLock { $0 += 1 } }, failure: { _, _ in blocksRun.withLock { $0 += 1 } })
                return operation as URLConnectionOperation
            }
            manager.enqueueBatch(of: operations, progress: { finished, total in
                #expect(total == 12)
                progress.withLock { $0.append(finished) }
            }, completion: { finished in
                seenAtCompletion.withLock { $0 = (blocksRun.withLock { $0 }, progress.withLock { $0 }) }
                #expect(finished.count == 12)
                completion.fire()
            })
            try await completion.wait()
            let seen = seenAtCompletion.withLock { $0 }
            #expect(seen.blocks == 12, "every operation's block ran before the batch completion")
            #expect(seen.progress.sorted() == Array(1...12))
        }

        @Test func anEmptyBatchStillCompletes() async throws {
            let completion = TestSignal("empty batch")
            manager().enqueueBatch(of: [], completion: { operations in
                #expect(operations.isEmpty)
                completion.fire()
            })
            try await completion.wait()
        }

        @Test func aChainBuildsEachRequestFromTheResultsBeforeIt() async throws {
            let manager = manager()
            let login = try #require(manager.post("echo", parameters: ["token": "s3cret"], success: nil, failure: nil))
            let done = TestSignal("chain")
            let authorization = Mutex<String?>(nil)
            manager.chain(after: [login], success: { _, object in
                let headers = (object as? [String: Any])?["headers"] as? [String: String]
                authorization.withLock { $0 = headers?["authorization"] }
                done.fire()
            }, failure: { _, error in
                Issue.record("\(error)")
                done.fire()
            }) { dependencies in
                let echo = (dependencies[0] as? HTTPRequestOperation)?.responseObject as? [String: Any]
                let token = ((echo?["body"] as? String) ?? "").replacingOccurrences(of: "token=", with: "")
                var request = URLRequest(url: testServer.url(.echo))
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                return request
            }
            try await done.wait()
            #expect(authorization.withLock { $0 } == "Bearer s3cret")
        }

        @Test func aFailedDependencyFailsTheChainWithATypedErrorUnlessAskedToRun() async throws {
            let manager = manager()
            let first = try #require(manager.get("status/500", success: nil, failure: nil))
            let recorder = OutcomeRecorder()
            let dependent = manager.chain(after: [first]) { _ in URLRequest(url: testServer.url(.echo)) }
            let anyway = manager.chain(after: [first], runsWhenDependenciesFail: true) { _ in URLRequest(url: testServer.url(.echo)) }
            recorder.watch(dependent)
            recorder.watch(anyway)
            try await recorder.done.wait(times: 2)
            let error = try #require(recorder.outcome(of: dependent)?.error as? DependencyError)
            #expect(error.failedOperation === first)
            #expect(!error.dependencyWasCancelled)
            #expect(dependent.response == nil, "nothing was sent")
            #expect(recorder.outcome(of: anyway)?.error == nil)
        }

        @Test func cancellingTheHeadCancelsTheWholeChain() async throws {
            let manager = manager()
            let head = try #require(manager.get("delay/5000", success: nil, failure: nil))
            var links: [DependentRequestOperation] = []
            var previous: Operation = head
            for _ in 0..<5 {
                let link = manager.chain(after: [previous]) { _ in URLRequest(url: testServer.url(.bytes(1))) }
                links.append(link)
                previous = link
            }
            let recorder = OutcomeRecorder()
            links.forEach(recorder.watch)
            head.cancel()
            try await recorder.done.wait(times: 5)
            for link in links {
                let error = recorder.outcome(of: link)?.error as? DependencyError
                #expect(error?.dependencyWasCancelled == true)
                #expect(error?.rootFailedOperation === head)
            }
        }

        @Test func aHundredDeepChainRunsInOrder() async throws {
            let manager = manager()
            manager.operationQueue.maxConcurrentOperationCount = 8
            manager.responseSerializer = HTTPResponseSerializer()
            let order = Mutex<[Int]>([])
            let done = TestSignal("last link")
            var previous: Operation?
            for index in 0..<100 {
                let operation = DependentRequestOperation(dependencies: previous.map { [$0] } ?? []) { _ in
                    URLRequest(url: testServer.url(.bytes(index + 1)))
                }
                operation.responseSerializer = HTTPResponseSerializer()
                operation.setCompletionBlockWithSuccess({ _, _ in
                    order.withLock { $0.append(index) }
                    if index == 99 { done.fire() }
                }, failure: { _, error in Issue.record("link \(index): \(error)") })
                manager.enqueue(operation)
                previous = operation
            }
            try await done.wait(timeout: .seconds(30))
            #expect(order.withLock { $0 } == Array(0..<100))
        }

        @Test func aFanInOfFiftyWaitsForAll() async throws {
            let manager = manager()
            manager.responseSerializer = HTTPResponseSerializer()
            let sources = (0..<50).compactMap { index in manager.get("bytes/\(index + 1)", success: nil, failure: nil) }
            #expect(sources.count == 50)
            let done = TestSignal("fan-in")
            let sizes = Mutex(0)
            manager.chain(after: sources, success: { _, _ in done.fire() }, failure: { _, error in
                Issue.record("\(error)")
                done.fire()
            }) { dependencies in
                sizes.withLock { $0 = dependencies.compactMap { ($0 as? HTTPRequestOperation)?.responseData?.count }.reduce(0, +) }
                return URLRequest(url: testServer.url(.echo))
            }
            try await done.wait()
            #expect(sizes.withLock { $0 } == (1...50).reduce(0, +))
        }

        /// The subclassing example of Docs/GettingStarted.md, run.
        final class TracedOperation: HTTPRequestOperation, @unchecked Sendable {
            override func processResponse() {
                super.processResponse()
                userInfo["traced"] = currentRequest.value(forHTTPHeaderField: "X-Trace-ID")
            }
        }

        final class APIClient: HTTPRequestOperationManager, @unchecked Sendable {
            init() {
                super.init(baseURL: testServer.baseURL)
                operationFactory = { request in
                    var request = request
                    request.setValue(UUID().uuidString, forHTTPHeaderField: "X-Trace-ID")
                    return TracedOperation(request: request)
                }
                operationQueue.maxConcurrentOperationCount = 16
            }
        }

        @Test func aManagerSubclassWithItsOwnOperationClass() async throws {
            let client = APIClient()
            struct Headers: Decodable, Sendable { let headers: [String: String] }
            let echoed = try await client.get("echo", as: Headers.self)
            #expect(echoed.headers["x-trace-id"]?.count == 36)
            let operation = try #require(client.get("bytes/1", success: nil, failure: nil) as? TracedOperation)
            try await waitUntilFinished(operation)
            #expect(operation.userInfo["traced"] as? String == operation.currentRequest.value(forHTTPHeaderField: "X-Trace-ID"))
        }

        @Test func aFanOutRunsEveryDependentAfterTheSource() async throws {
            let manager = manager()
            let source = try #require(manager.get("echo", parameters: ["n": "7"], success: nil, failure: nil))
            let recorder = OutcomeRecorder()
            let dependents = (0..<10).map { index in
                manager.chain(after: [source]) { dependencies in
                    let query = ((dependencies[0] as? HTTPRequestOperation)?.responseObject as? [String: Any])?["query"] as? [String: String]
                    return URLRequest(url: testServer.url(.echo).appendingPathComponent("\(index)-\(query?["n"] ?? "?")"))
                }
            }
            dependents.forEach(recorder.watch)
            try await recorder.done.wait(times: 10)
            for (index, dependent) in dependents.enumerated() {
                #expect(dependent.currentRequest.url?.lastPathComponent == "\(index)-7")
            }
        }

        @Test func theSerializersTimeoutReachesTheVerbsRequests() throws {
            let manager = manager()
            var serializer = HTTPRequestSerializer()
            serializer.timeoutInterval = 3
            manager.requestSerializer = serializer
            let operation = try #require(manager.get("bytes/1", success: nil, failure: nil))
            #expect(operation.request.timeoutInterval == 3)
        }

        @Test func tenThousandOperationsAtThirtyTwoInFlightNoneLost() async throws {
            let manager = manager()
            manager.operationQueue.maxConcurrentOperationCount = 32
            manager.responseSerializer = HTTPResponseSerializer()
            let recorder = OutcomeRecorder()
            var operations: [HTTPRequestOperation] = []     // kept alive: the recorder keys by identity
            for index in 0..<10_000 {
                // Watched before it is enqueued: a verb enqueues at once, and an operation that
                // finished before its blocks were set would be counted as lost.
                let operation = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.bytes(index % 50 + 1))),
                                                             success: nil, failure: nil)
                recorder.watch(operation)
                manager.enqueue(operation)
                operations.append(operation)
            }
            try await recorder.done.wait(times: 10_000, timeout: .seconds(120))
            let outcomes = recorder.all
            #expect(outcomes.count == 10_000)
            #expect(outcomes.allSatisfy { $0.error == nil })
            #expect(operations.allSatisfy { $0.isFinished || $0.responseData != nil })
        }

        struct Echo: Decodable, Sendable {
            let method: String
            let query: [String: String]
        }

        @Test func asyncVerbsReturnTheTypedValue() async throws {
            let manager = manager()
            let typed = try await manager.get("echo", parameters: ["q": "2"], as: Echo.self)
            #expect(typed.method == "GET")
            #expect(typed.query == ["q": "2"])
            await #expect(throws: ResponseValidationError.self) { try await manager.get("status/404", as: Echo.self) }
            // An operation's value is what its serializer made, as the type asked for.
            let operation = try manager.httpRequestOperation(with: URLRequest(url: manager.url(for: "bytes/10")), success: nil, failure: nil)
            operation.responseSerializer = HTTPResponseSerializer()
            #expect(try await manager.run(operation, as: Data.self).count == 10)
            #expect(operation.response?.statusCode == 200)
            // Asked for a type it did not make: a typed error, never a crash or a nil.
            let json = try manager.httpRequestOperation(with: URLRequest(url: manager.url(for: "echo")), success: nil, failure: nil)
            await #expect(throws: ResponseSerializationError.self) { _ = try await manager.run(json, as: Data.self) }
            // An operation started by hand, awaited.
            let own = HTTPRequestOperation(request: URLRequest(url: try manager.url(for: "bytes/7")))
            own.start()
            #expect(try await own.outcome(as: Data.self).count == 7)
        }

        /// A body written to a file is not the operation's value: asked as an optional, it is
        /// nil and the file holds the body; asked as `Data`, a typed error says there was none.
        @Test func aDownloadToAFileIsAwaitedAsAnOptional() async throws {
            let manager = manager()
            let file = temporaryFile()
            defer { removeDownload(file) }
            let download = try manager.httpRequestOperation(with: URLRequest(url: manager.url(for: "bytes/1000")), success: nil, failure: nil)
            download.responseSerializer = HTTPResponseSerializer()
            download.destinationURL = file
            #expect(try await manager.run(download, as: Data?.self) == nil)
            #expect(try Data(contentsOf: file).count == 1_000)
            let again = try manager.httpRequestOperation(with: URLRequest(url: manager.url(for: "bytes/10")), success: nil, failure: nil)
            again.responseSerializer = HTTPResponseSerializer()
            again.destinationURL = temporaryFile()
            defer { again.destinationURL.map(removeDownload) }
            let error = await #expect(throws: ResponseSerializationError.self) { _ = try await manager.run(again, as: Data.self) }
            #expect(error?.code == .emptyBody)
        }

        @Test func cancellingTheTaskCancelsTheOperation() async throws {
            let manager = manager()
            let started = TestSignal("started")
            let token = NotificationCenter.default.addObserver(forName: .networkingOperationDidStart, object: nil, queue: nil) { note in
                if (note.object as? URLConnectionOperation)?.request.url?.path == "/delay/10000" { started.fire() }
            }
            defer { NotificationCenter.default.removeObserver(token) }
            let task = Task { try await manager.get("delay/10000", as: Echo.self) }
            try await started.wait()
            task.cancel()
            do {
                _ = try await task.value
                Issue.record("expected cancellation")
            } catch {
                #expect((error as? URLError)?.code == .cancelled)
            }
        }

        @Test func awaitingAnOperationLeavesItsBlocksAlone() async throws {
            let operation = operation(.bytes(300_000))
            let blockRan = Mutex(false)
            operation.setCompletionBlockWithSuccess({ _, _ in blockRan.withLock { $0 = true } }, failure: nil)
            let progress = operation.downloadProgressStream()
            _ = try await manager().run(operation, as: Data.self)
            #expect(operation.response?.statusCode == 200)
            #expect(blockRan.withLock { $0 })
            var last: TransferProgress?
            for await report in progress { last = report }
            #expect(last?.totalBytes == 300_000)
        }
    }
}
