import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Synchronization
import Testing

extension AllTests {
    @Suite struct Multipart {
        /// Reads a request's body stream to the end, as curl would.
        private func drain(_ request: URLRequest) throws -> Data {
            let stream = try #require(request.httpBodyStream)
            stream.open()
            defer { stream.close() }
            var body = Data()
            var buffer = [UInt8](repeating: 0, count: 7_919)         // a prime: chunk edges fall everywhere
            while true {
                let count = stream.read(&buffer, maxLength: buffer.count)
                #expect(count >= 0, "\(stream.streamError.map { "\($0)" } ?? "")")
                if count <= 0 { break }
                body.append(buffer, count: count)
            }
            return body
        }

        /// The parts of `body` as Python's `email` package reads them: an independent parser.
        private func parseWithPython(_ body: Data, contentType: String) throws -> [[String: Any]] {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-multipart-\(UUID())")
            defer { try? FileManager.default.removeItem(at: file) }
            try body.write(to: file)
            let script = """
            import sys, json, hashlib, email
            from email import policy
            body = open(sys.argv[1], 'rb').read()
            msg = email.message_from_bytes(b"Content-Type: " + sys.argv[2].encode() + b"\\r\\n\\r\\n" + body, policy=policy.HTTP)
            parts = []
            for part in msg.iter_parts():
                payload = part.get_payload(decode=True) or b""
                parts.append({"name": part.get_param("name", header="content-disposition"), "filename": part.get_filename(),
                              "type": part.get_content_type(), "length": len(payload), "sha256": hashlib.sha256(payload).hexdigest(),
                              "custom": part.get("X-Custom")})
            print(json.dumps({"defects": [str(d) for d in msg.defects], "parts": parts}))
            """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script, file.path, contentType]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let parsed = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect((parsed["defects"] as? [String])?.isEmpty == true, "\(parsed["defects"] ?? "")")
            return try #require(parsed["parts"] as? [[String: Any]])
        }

        @Test func theFramingParsesBackWithAnIndependentParser() throws {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("photo \(UUID()).PNG")
            defer { try? FileManager.default.removeItem(at: file) }
            var random = SeededGenerator(for: "theFramingParsesBackWithAnIndependentParser")
            let fileBytes = Data((0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) })   // CRLFs included
            try fileBytes.write(to: file)
            let streamed = Data("streamed ✓".utf8)
            let request = try HTTPRequestSerializer().multipartFormRequest(
                method: "POST", urlString: "http://a.test/up", parameters: ["user": ["name": "ada"], "tags": ["a", "b"]]
            ) { form in
                try form.appendPart(fileURL: file, name: "photo")
                form.appendPart(fileData: Data("{}".utf8), name: "meta", fileName: "meta.json", mimeType: "application/json")
                form.appendPart(inputStream: InputStream(data: streamed), name: "note", fileName: "note.txt",
                                length: Int64(streamed.count), mimeType: "text/plain")
                form.appendPart(headers: ["Content-Disposition": "form-data; name=\"raw\"", "X-Custom": "yes"], body: Data("r".utf8))
            }
            let contentType = try #require(request.value(forHTTPHeaderField: "Content-Type"))
            #expect(contentType.hasPrefix("multipart/form-data; boundary=HTTPOperations.boundary."))
            let body = try drain(request)
            #expect(request.value(forHTTPHeaderField: "Content-Length") == "\(body.count)", "Content-Length is exact")

            let parts = try parseWithPython(body, contentType: contentType)
            #expect(parts.map { $0["name"] as? String } == ["tags[]", "tags[]", "user[name]", "photo", "meta", "note", "raw"])
            #expect(parts[3]["filename"] as? String == file.lastPathComponent)
            #expect(parts[3]["type"] as? String == "image/png", "MIME type from the extension, case-insensitively")
            #expect(parts[3]["sha256"] as? String == sha256(fileBytes))
            #expect(parts[4]["type"] as? String == "application/json")
            #expect(parts[5]["sha256"] as? String == sha256(streamed))
            #expect(parts[6]["custom"] as? String == "yes")
            #expect(parts[2]["sha256"] as? String == sha256(Data("ada".utf8)))
        }

        @Test func eachRequestHasItsOwnBoundary() throws {
            let serializer = HTTPRequestSerializer()
            let first = try serializer.multipartFormRequest(method: "POST", urlString: "http://a.test/")
            let second = try serializer.multipartFormRequest(method: "POST", urlString: "http://a.test/")
            #expect(first.value(forHTTPHeaderField: "Content-Type") != second.value(forHTTPHeaderField: "Content-Type"))
        }

        @Test func anUnreadableFileIsRefusedBeforeAnythingIsSent() {
            let missing = URL(fileURLWithPath: "/nonexistent/\(UUID()).bin")
            #expect(throws: RequestSerializationError.self) {
                try HTTPRequestSerializer().multipartFormRequest(method: "POST", urlString: "http://a.test/") { form in
                    try form.appendPart(fileURL: missing, name: "f")
                }
            }
            #expect(throws: RequestSerializationError.self) {
                try HTTPRequestSerializer().multipartFormRequest(method: "POST", urlString: "http://a.test/") { form in
                    try form.appendPart(fileURL: FileManager.default.temporaryDirectory, name: "folder")
                }
            }
        }

        @Test func throttlingBecomesCurlsSendRate() throws {
            let request = try HTTPRequestSerializer().multipartFormRequest(method: "POST", urlString: "http://a.test/") { form in
                form.throttleBandwidth(packetSize: 16_000, delay: 0.2)
            }
            #expect((request.httpBodyStream as? RewindableBodyStream)?.maximumSendRate == 80_000)
        }

        @Test func aMultipartBodyIsSentAgainAfterA307() async throws {
            let request = try HTTPRequestSerializer().multipartFormRequest(
                method: "POST", urlString: testServer.url(.redirectTo("/echo", status: 307)).absoluteString, parameters: ["k": "v"]
            ) { form in
                form.appendPart(fileData: Data(repeating: 65, count: 100_000), name: "f", fileName: "a.txt", mimeType: "text/plain")
            }
            let echo = try echoed(try await run(HTTPRequestOperation(request: request)))
            #expect(echo["method"] as? String == "POST")
            #expect("\(echo["bodyLength"] ?? "")" == request.value(forHTTPHeaderField: "Content-Length"))
        }

        @Test(.enabled(if: residentMemoryIsMeaningful, "RSS under AddressSanitizer measures the sanitizer"))
        func aLargeFileUploadsInFlatMemoryWithProgress() async throws {
            let size: Int64 = 200 << 20
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-upload-\(UUID()).bin")
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
            let handle = try FileHandle(forWritingTo: file)
            try handle.truncate(atOffset: UInt64(size))                 // sparse: no disk time, real reads
            try handle.close()
            let request = try HTTPRequestSerializer().multipartFormRequest(
                method: "POST", urlString: testServer.url(.upload).absoluteString
            ) { form in
                try form.appendPart(fileURL: file, name: "big")
            }
            let op = HTTPRequestOperation(request: request)
            let sent = Mutex<Int64>(0)
            let peakGrowth = Mutex(0)
            try MemoryProbe.resetPeak()
            let baseline = try MemoryProbe.residentBytes()
            op.setUploadProgressBlock { bytes, _, expected in
                sent.withLock { $0 += bytes }
                #expect(expected == Int64(request.value(forHTTPHeaderField: "Content-Length") ?? "") ?? -1)
                peakGrowth.withLock { $0 = max($0, ((try? MemoryProbe.residentBytes()) ?? Int.max) - baseline) }
            }
            let outcome = try await run(op, timeout: .seconds(120))
            let growth = max(try MemoryProbe.peakBytes() - baseline, peakGrowth.withLock { $0 })
            #expect(outcome.error == nil)
            let responseData = try #require(op.responseData)
            let summary = try #require(try JSONSerialization.jsonObject(with: responseData) as? [String: Any])
            #expect("\(summary["bodyLength"] ?? "")" == request.value(forHTTPHeaderField: "Content-Length"))
            #expect(sent.withLock { $0 } == Int64(request.value(forHTTPHeaderField: "Content-Length") ?? ""))
            #expect(growth < 32 << 20, "peak memory grew by \(growth >> 20) MiB")
        }
    }
}
