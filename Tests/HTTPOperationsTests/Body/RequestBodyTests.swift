import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

/// A request body stream that notes the threads it is read on, and can be held shut.
final class ObservedInputStream: InputStream {
    // `data` and `offset` are touched by one reader at a time (the library's reader queue);
    // what the test reads lives behind `shared`.
    private struct Shared {
        var readsOnNetworkThread = 0
        var reads = 0
        var gated: Bool
        var status = Stream.Status.notOpen
    }

    private let data: Data
    private var offset = 0
    private let shared: Mutex<Shared>
    private let gate = DispatchSemaphore(value: 0)
    let blocked = TestSignal("the stream blocked")

    init(data: Data, gated: Bool = false) {
        self.data = data
        self.shared = Mutex(Shared(gated: gated))
        super.init(data: Data())
    }

    /// How many reads there were, and how many of them ran on the network thread.
    var reads: (all: Int, onNetworkThread: Int) { shared.withLock { ($0.reads, $0.readsOnNetworkThread) } }

    func openGate() {
        shared.withLock { $0.gated = false }
        gate.signal()
    }

    override var streamStatus: Stream.Status { shared.withLock { $0.status } }
    override var hasBytesAvailable: Bool { offset < data.count }
    override func open() { shared.withLock { $0.status = .open } }
    override func close() { shared.withLock { $0.status = .closed } }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let gated = shared.withLock { shared -> Bool in
            shared.reads += 1
            if NetworkThread.shared.isCurrentThread { shared.readsOnNetworkThread += 1 }
            return shared.gated
        }
        if gated {
            blocked.fire()
            gate.wait()
        }
        let count = min(maxLength, data.count - offset)
        data.copyBytes(to: buffer, from: offset..<(offset + count))
        offset += count
        if offset == data.count { shared.withLock { $0.status = .atEnd } }
        return count
    }
}

extension AllTests {
    /// Request bodies from streams are read off the network thread (issue 13): a caller's
    /// `InputStream` is user code, and a file part is a blocking read(2).
    @Suite struct RequestBodies {
        private func upload(_ stream: InputStream, length: Int?) -> HTTPRequestOperation {
            var request = URLRequest(url: testServer.url(.echo))
            request.httpMethod = "POST"
            request.httpBodyStream = stream
            if let length { request.setValue("\(length)", forHTTPHeaderField: "Content-Length") }
            return HTTPRequestOperation(request: request)
        }

        @Test(arguments: [true, false])
        func aCallersStreamIsNeverReadOnTheNetworkThread(lengthKnown: Bool) async throws {
            let body = TestServer.pattern(count: 1_000_000)
            let stream = ObservedInputStream(data: body)
            let op = upload(stream, length: lengthKnown ? body.count : nil)
            let echo = try echoed(try await run(op))
            #expect(echo["bodyLength"] as? Int == body.count)
            #expect(stream.reads.all > 0)
            #expect(stream.reads.onNetworkThread == 0, "\(stream.reads)")
        }

        @Test func aStreamThatBlocksHoldsUpNoOtherTransfer() async throws {
            let body = TestServer.pattern(count: 200_000)
            let stream = ObservedInputStream(data: body, gated: true)
            let op = upload(stream, length: body.count)
            let recorder = OutcomeRecorder()
            recorder.watch(op)
            OperationQueue().addOperation(op)
            try await stream.blocked.wait()

            // The network thread is free while the stream blocks.
            let other = try await run(operation(.bytes(1000)), timeout: .seconds(10))
            #expect(other.error == nil)
            #expect(recorder.outcome(of: op) == nil)

            stream.openGate()
            try await recorder.done.wait()
            let outcome = try #require(recorder.outcome(of: op))
            #expect(try echoed(outcome)["bodyLength"] as? Int == body.count)
        }

        @Test func aMultipartFileIsReadOffTheNetworkThreadAndRewoundForA307() async throws {
            let file = temporaryFile()
            defer { removeDownload(file) }
            let bytes = TestServer.pattern(count: 300_000)
            try bytes.write(to: file)
            let request = try HTTPRequestSerializer().multipartFormRequest(
                method: "POST", urlString: testServer.url(.redirectTo("/upload", status: 307)).absoluteString, parameters: nil
            ) { form in
                try form.appendPart(fileURL: file, name: "file")
            }
            let op = HTTPRequestOperation(request: request)
            let sent = Mutex<Int64>(0)
            op.setUploadProgressBlock { bytes, _, _ in sent.withLock { $0 += bytes } }
            let outcome = try await run(op)
            let data = try #require(op.responseData)
            let summary = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(outcome.error == nil)
            #expect("\(summary["bodyLength"] ?? "")" == request.value(forHTTPHeaderField: "Content-Length"))
        }

        @Test func aPlainStreamCannotBeSentTwice() async throws {
            var request = URLRequest(url: testServer.url(.redirectTo("/echo", status: 307)))
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: Data("once".utf8))
            request.setValue("4", forHTTPHeaderField: "Content-Length")
            let outcome = try await run(HTTPRequestOperation(request: request))
            #expect(outcome.urlErrorCode == .requestBodyStreamExhausted)
        }
    }
}
