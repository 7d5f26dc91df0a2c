import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import HTTPOperations
import HTTPTestServer
import Testing

/// What the library refuses to do for anyone: split a request with CR or LF, use a scheme
/// nobody allowed, carry secrets across origins, write resume data others can read or that
/// points elsewhere, write through a planted symbolic link, expand an XML external entity,
/// run on a libcurl with known connection-reuse flaws.
extension AllTests {
    @Suite struct HardeningTests {
        // MARK: - Request splitting

        @Test(arguments: ["X Bad", "X-Bad\r\nX-Injected", "", "X(Bad)", "X:Bad", "X-Bad\u{0}"])
        func aHeaderNameThatWouldSplitTheRequestIsRefusedBeforeSending(name: String) async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            var request = URLRequest(url: server.url(.echo))
            request.setValue("v", forHTTPHeaderField: name)
            // Foundation keeps these names as given; the operation must refuse them.
            try #require(request.allHTTPHeaderFields?[name] == "v")
            let outcome = try await run(HTTPRequestOperation(request: request))
            let error = try #require(outcome.error as? SecurityError, "sent: \(server.receivedRequests)")
            #expect(error.code == .invalidHeaderField)
            #expect(!error.description.contains("\r") && !error.description.contains("\n"), "the message must stay one line")
            #expect(server.receivedRequests.isEmpty)
        }

        @Test(arguments: ["a\r\nX-Injected: 1", "a\nX-Injected: 1", "a\rX-Injected: 1", "a\u{0}b"])
        func aHeaderValueWithCROrLFNeverReachesTheWire(value: String) async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            var request = URLRequest(url: server.url(.echo))
            request.setValue(value, forHTTPHeaderField: "X-Evil")
            // Foundation's URLRequest drops such a value itself (measured on this toolchain):
            // whatever holds it, nothing of it is sent.
            let outcome = try await run(HTTPRequestOperation(request: request))
            if let error = outcome.error { #expect((error as? SecurityError)?.code == .invalidHeaderField) }
            for received in server.receivedRequests {
                #expect(received.header("X-Injected") == nil && received.header("X-Evil") == nil)
            }
            // The check itself, for whatever builds a request without Foundation's filter.
            #expect(throws: SecurityError.self) { try HTTPFieldValidation.check(name: "X-Evil", value: value) }
        }

        @Test(arguments: ["GET /admin HTTP/1.1\r\nX:", "GE T", "", "G\u{0}ET", "GET\n"])
        func aMethodThatIsNotATokenIsRefused(method: String) async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            var request = URLRequest(url: server.url(.echo))
            request.httpMethod = method
            let outcome = try await run(HTTPRequestOperation(request: request))
            #expect((outcome.error as? SecurityError)?.code == .invalidMethod, "\(String(describing: outcome.error))")
            #expect(server.receivedRequests.isEmpty)
        }

        @Test func theSerializersRefuseThemWhenTheRequestIsMade() throws {
            var serializer = HTTPRequestSerializer()
            serializer.setValue("a\r\nX-Injected: 1", forHTTPHeaderField: "X-Evil")
            #expect(throws: SecurityError.self) { try serializer.request(method: "GET", urlString: "http://a.test/") }
            let clean = HTTPRequestSerializer()
            #expect(throws: SecurityError.self) { try clean.request(method: "GET\r\nX", urlString: "http://a.test/") }
            #expect(throws: SecurityError.self) {
                try clean.multipartFormRequest(method: "POST", urlString: "http://a.test/") { form in
                    form.appendPart(fileData: Data("x".utf8), name: "f", fileName: "f.txt", mimeType: "text/plain\r\nX-Injected: 1")
                }
            }
            #expect(throws: SecurityError.self) {
                try clean.multipartFormRequest(method: "POST", urlString: "http://a.test/") { form in
                    form.appendPart(headers: ["Content-Disposition": "form-data; name=\"a\"\r\n\r\nsmuggled"], body: Data())
                }
            }
            // Names with quotes and line breaks are escaped, not refused (WHATWG form encoding).
            _ = try clean.multipartFormRequest(method: "POST", urlString: "http://a.test/") { form in
                form.appendPart(formData: Data("v".utf8), name: "a\"\r\nb")
            }
        }

        // MARK: - Schemes

        @Test func onlyHTTPAndHTTPSUnlessFileIsAllowed() async throws {
            let folder = try TemporaryFolder()
            let file = try folder.write("local.txt", "local bytes")
            let refused = try await run(HTTPRequestOperation(request: URLRequest(url: file)))
            #expect((refused.error as? SecurityError)?.code == .schemeNotAllowed)
            let manager = HTTPRequestOperationManager()
            #expect(manager.defaultConfiguration.allowedSchemes == ["http", "https"])
            manager.defaultConfiguration.allowedSchemes.insert("FILE")
            let op = manager.httpRequestOperation(with: URLRequest(url: file), success: nil, failure: nil)
            #expect(op.configuration.allowedSchemes.contains("file"))
            op.responseSerializer = HTTPResponseSerializer()
            let allowed = try await run(op)
            #expect(allowed.error == nil, "\(String(describing: allowed.error))")
            #expect(allowed.data == Data("local bytes".utf8))
        }

        // MARK: - Secrets across origins

        @Test func aRedirectToAnotherOriginSendsNoSecrets() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            // 127.0.0.1 and localhost are the same server but two origins.
            let target = server.url(.echo, host: "localhost").absoluteString
            var request = URLRequest(url: server.url(.redirectTo(target, status: 307)))
            for (name, value) in [("Authorization", "Bearer t"), ("Cookie", "s=1"), ("Proxy-Authorization", "Basic eA=="),
                                  ("X-Api-Key", "k-123"), ("X-Trace", "kept")] {
                request.setValue(value, forHTTPHeaderField: name)
            }
            let op = HTTPRequestOperation(request: request)
            op.configuration.sensitiveHeaderFields = ["x-API-key"]
            #expect(try await run(op).error == nil)
            let received = server.receivedRequests
            try #require(received.count == 2)
            #expect(received[0].header("X-Api-Key") == "k-123")
            for name in ["Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"] {
                #expect(received[1].header(name) == nil, "\(name) went to another origin")
            }
            #expect(received[1].header("X-Trace") == "kept")
        }

        /// However it is set: through `credential`, or in a whole `defaultConfiguration`.
        @Test(arguments: [false, true])
        func theManagersCredentialGoesOnlyToItsBaseURLsOrigin(throughConfiguration: Bool) async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
            manager.responseSerializer = HTTPResponseSerializer()
            let credential = URLCredential(user: "u", password: "p", persistence: .none)
            if throughConfiguration {
                var configuration = OperationConfiguration()
                configuration.credential = credential
                manager.defaultConfiguration = configuration
            } else {
                manager.credential = credential
            }
            let home = manager.httpRequestOperation(with: URLRequest(url: server.url(.basicAuth(user: "u", password: "p"))),
                                                    success: nil, failure: nil)
            #expect(try await run(home).error == nil)
            let elsewhere = server.url(.basicAuth(user: "u", password: "p"), host: "localhost")
            let away = manager.httpRequestOperation(with: URLRequest(url: elsewhere), success: nil, failure: nil)
            let outcome = try await run(away)
            #expect(away.response?.statusCode == 401, "\(String(describing: outcome.error))")
            #expect(server.receivedRequests.filter { $0.header("Authorization") != nil }.count == 1)
        }

        // MARK: - Resume data and destination files

        @Test func resumeDataSidecarsArePrivateAndHoldNoSecrets() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let folder = try TemporaryFolder()
            let file = folder.url.appendingPathComponent("download.bin")
            var components = URLComponents(url: server.url(.drop(total: 200_000, after: 50_000)), resolvingAgainstBaseURL: false)!
            components.user = "alice"
            components.password = "hunter2"
            var request = URLRequest(url: components.url!)
            request.setValue("k-123", forHTTPHeaderField: "X-Api-Key")
            request.setValue("Bearer t0ken", forHTTPHeaderField: "Authorization")
            request.setValue("kept", forHTTPHeaderField: "X-Trace")
            let op = HTTPRequestOperation(request: request)
            op.destinationURL = file
            op.retryPolicy = .none
            op.configuration.sensitiveHeaderFields = ["X-Api-Key"]
            #expect(try await run(op).error != nil)
            let sidecar = ResumeData.sidecarURL(for: file)
            let attributes = try FileManager.default.attributesOfItem(atPath: sidecar.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let text = try String(contentsOf: sidecar, encoding: .utf8)
            for secret in ["hunter2", "alice", "k-123", "t0ken", "X-Api-Key", "Authorization"] {
                #expect(!text.contains(secret), "the sidecar holds \(secret): \(text)")
            }
            #expect(text.contains("kept"))
            #expect(op.resumeData?.url.user == nil)
        }

        @Test func aSidecarCannotSendADownloadSomewhereElse() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let folder = try TemporaryFolder()
            let file = try folder.write("wanted.bin", "12345")
            let victim = folder.url.appendingPathComponent("victim.bin")
            let url = server.url(.bytes(1000))
            let planted = ResumeData(url: url, validator: nil, offset: 5, expectedLength: 1000, destination: victim)
            try planted.encoded().write(to: ResumeData.sidecarURL(for: file))
            let (op, resuming) = HTTPRequestOperation.download(URLRequest(url: url), to: file)
            #expect(resuming == nil)
            #expect(op.destinationURL == file)
            #expect(try await run(op).error == nil)
            #expect(!FileManager.default.fileExists(atPath: victim.path))
            #expect(try Data(contentsOf: file) == TestServer.pattern(count: 1000))
        }

        @Test func aDestinationThatIsASymbolicLinkIsRefusedUnlessAskedFor() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let folder = try TemporaryFolder()
            let precious = try folder.write("precious.txt", "precious")
            let link = folder.url.appendingPathComponent("download.bin")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: precious)
            let op = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(1000))))
            op.destinationURL = link
            let outcome = try await run(op)
            #expect((outcome.error as? SecurityError)?.code == .destinationIsSymbolicLink, "\(String(describing: outcome.error))")
            #expect(try String(contentsOf: precious, encoding: .utf8) == "precious")
            #expect(server.receivedRequests.isEmpty)
            let following = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(1000))))
            following.destinationURL = link
            following.followsSymbolicLinks = true
            #expect(try await run(following).error == nil)
            #expect(try Data(contentsOf: precious) == TestServer.pattern(count: 1000))
        }

        // MARK: - XML

        @Test(arguments: [XMLNode.Options(), .nodeLoadExternalEntitiesAlways])
        func anXMLExternalEntityIsNeverLoaded(options: XMLNode.Options) throws {
            let folder = try TemporaryFolder()
            let secret = try folder.write("secret.txt", "TOP-SECRET-CONTENTS")
            let xml = """
            <?xml version="1.0"?>
            <!DOCTYPE r [<!ENTITY x SYSTEM "\(secret.absoluteString)">]>
            <r>&x;</r>
            """
            let serializer = XMLDocumentResponseSerializer(options: options)
            #expect(serializer.options.contains(.nodeLoadExternalEntitiesNever))
            let document = try serializer.decode(response: nil, data: Data(xml.utf8)) as? XMLDocument
            let text = document?.xmlString ?? ""
            #expect(!text.contains("TOP-SECRET"), "the entity was expanded: \(text)")
        }

        // MARK: - libcurl

        @Test func anOldLibcurlIsRefusedWithAClearMessage() throws {
            #expect(Libcurl.versionProblem == nil, "this machine's libcurl \(Libcurl.version) is too old")
            let problem = try #require(Libcurl.problem(versionNumber: 0x075400, version: "7.84.0"))
            #expect(problem.code == .unsupportedLibcurl)
            #expect(problem.description.contains("7.84.0") && problem.description.contains("7.85.0"))
            #expect(Libcurl.problem(versionNumber: 0x075500, version: "7.85.0") == nil)
            #expect(Libcurl.problem(versionNumber: 0x080B00, version: "8.11.0") == nil)
        }

        /// CI runs the libcurl-sensitive suites a second time on Debian 12's libcurl, put first
        /// with `LD_LIBRARY_PATH`, and names its version here: that run proves it is the one
        /// loaded, not the installed one.
        @Test(.enabled(if: ProcessInfo.processInfo.environment["HTTPOPERATIONS_EXPECT_LIBCURL"] != nil,
                       "no libcurl version is expected"))
        func theExpectedLibcurlIsLoaded() {
            #expect(Libcurl.version == ProcessInfo.processInfo.environment["HTTPOPERATIONS_EXPECT_LIBCURL"])
        }
    }
}
