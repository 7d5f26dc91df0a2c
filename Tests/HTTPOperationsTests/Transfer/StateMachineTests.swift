import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// The pure parts of the core, tested without sockets.
    @Suite struct StateMachine {
        @Test func transitionsFollowTheLifeOfAnOperation() {
            let allowed: [(OperationPhase, OperationPhase)] = [
                (.ready, .executing), (.ready, .finished),
                (.executing, .paused), (.executing, .finished),
                (.paused, .executing), (.paused, .finished),
            ]
            let phases: [OperationPhase] = [.ready, .executing, .paused, .finished]
            for from in phases {
                for to in phases {
                    let expected = allowed.contains { $0 == (from, to) }
                    #expect(from.canTransition(to: to) == expected, "\(from) → \(to)")
                }
            }
        }

        @Test func transitionsAnnounceTheKeysFoundationWatches() {
            #expect(OperationPhase.ready.changedKeys(to: .executing) == ["isExecuting"])
            #expect(OperationPhase.executing.changedKeys(to: .paused) == ["isExecuting"])
            #expect(OperationPhase.executing.changedKeys(to: .finished) == ["isExecuting", "isFinished"])
            #expect(OperationPhase.paused.changedKeys(to: .finished) == ["isFinished"])
            #expect(OperationPhase.ready.changedKeys(to: .finished) == ["isFinished"])
        }

        @Test func headParserSkipsNothingAndJoinsRepeatedFields() throws {
            var parser = ResponseHeadParser()
            let lines = ["HTTP/1.1 200 OK\r\n", "Content-Type: text/plain\r\n", "Set-Cookie: a=1\r\n",
                         "set-cookie: b=2\r\n", "X-Folded: one\r\n", "  two\r\n", "\r\n"]
            var heads: [ResponseHead] = []
            for line in lines {
                let bytes = Array(line.utf8)
                if let head = bytes.withUnsafeBytes({ parser.consume(line: $0) }) { heads.append(head) }
            }
            let head = try #require(heads.first)
            #expect(heads.count == 1)
            #expect(head.statusCode == 200)
            #expect(head.httpVersion == "HTTP/1.1")
            #expect(head.value(of: "content-type") == "text/plain")
            #expect(head.value(of: "X-Folded") == "one two")
            let response = head.httpURLResponse(for: URL(string: "http://example.test/")!)
            #expect(response.value(forHTTPHeaderField: "Set-Cookie") == "a=1, b=2")
        }

        @Test func headParserReadsEachHeadOfATransferOnItsOwn() throws {
            var parser = ResponseHeadParser()
            let lines = ["HTTP/1.1 100 Continue\r\n", "\r\n",
                         "HTTP/1.1 2x0 Weird\r\n", "Dropped: yes\r\n", "\r\n",
                         "HTTP/2 404 \r\n", "server: test\r\n", "Vary: Accept\r\n", "vary:  Origin \r\n",
                         "Content-Length: 0\r\n", "\r\n"]
            var heads: [ResponseHead] = []
            for line in lines {
                let bytes = Array(line.utf8)
                if let head = bytes.withUnsafeBytes({ parser.consume(line: $0) }) { heads.append(head) }
            }
            #expect(heads.map(\.statusCode) == [100, 404], "a status line whose code is not a number yields no head")
            let head = try #require(heads.last)
            #expect(head.httpVersion == "HTTP/2")
            #expect(head.fields.map(\.name) == ["server", "Vary", "vary", "Content-Length"])
            #expect(head.values(of: "VARY") == ["Accept", "Origin"])
            #expect(head.value(of: "Server") == "test")
            #expect(head.value(of: "Dropped") == nil)
            #expect(head.decodedContentLength == 0)
            #expect(head == ResponseHead(statusCode: 404, httpVersion: "HTTP/2", fields: [
                ("server", "test"), ("Vary", "Accept"), ("vary", "Origin"), ("Content-Length", "0"),
            ]))
        }

        @Test func theDecodedContentLengthIsReadFromDigitsOnly() {
            func length(_ fields: (String, String)...) -> Int64? {
                ResponseHead(statusCode: 200, httpVersion: "HTTP/1.1", fields: fields.map { (name: $0.0, value: $0.1) })
                    .decodedContentLength
            }
            #expect(length(("content-length", "1234")) == 1234)
            #expect(length(("Content-Length", "9223372036854775807")) == Int64.max)
            #expect(length(("Content-Length", "9223372036854775808")) == nil, "overflow")
            #expect(length(("Content-Length", "-1")) == nil)
            #expect(length(("Content-Length", "+5")) == nil)
            #expect(length(("Content-Length", "12a")) == nil)
            #expect(length(("Content-Length", "")) == nil)
            #expect(length() == nil)
            #expect(length(("Content-Encoding", "gzip"), ("Content-Length", "10")) == nil, "counts encoded bytes")
            #expect(length(("Content-Encoding", "IDENTITY"), ("Content-Length", "10")) == 10)
        }

        @Test func interimHeadsAreRecognised() {
            #expect(ResponseHead(statusCode: 100, httpVersion: "HTTP/1.1", fields: []).isInterim)
            #expect(!ResponseHead(statusCode: 101, httpVersion: "HTTP/1.1", fields: []).isInterim)
            #expect(!ResponseHead(statusCode: 204, httpVersion: "HTTP/1.1", fields: []).isInterim)
        }

        @Test(arguments: [
            (301, "POST", "GET"), (302, "POST", "GET"), (303, "POST", "GET"), (303, "PUT", "GET"),
            (303, "HEAD", "HEAD"), (307, "POST", "POST"), (308, "PUT", "PUT"), (301, "PUT", "PUT"),
        ])
        func redirectsChangeTheMethodAsClientsDo(status: Int, method: String, expected: String) throws {
            var request = URLRequest(url: URL(string: "http://a.test/x")!)
            request.httpMethod = method
            request.httpBody = Data("body".utf8)
            request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
            let next = try RedirectPolicy.request(following: status, from: request, to: URL(string: "http://a.test/y")!)
            #expect(next.httpMethod == expected)
            #expect(next.url?.path == "/y")
            let keepsBody = expected == method
            #expect((next.httpBody != nil) == keepsBody)
            #expect((next.value(forHTTPHeaderField: "Content-Type") != nil) == keepsBody)
        }

        @Test func redirectsToAnotherOriginDropCredentialsAndSecrets() throws {
            var request = URLRequest(url: URL(string: "http://a.test/x")!)
            request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
            request.setValue("k=v", forHTTPHeaderField: "Cookie")
            request.setValue("Basic cHJveHk=", forHTTPHeaderField: "Proxy-Authorization")
            request.setValue("key-123", forHTTPHeaderField: "X-Api-Key")
            request.setValue("kept", forHTTPHeaderField: "X-Trace")
            let secrets: Set<String> = ["x-api-key"]
            let sameOrigin = try RedirectPolicy.request(following: 302, from: request, to: URL(string: "http://a.test:80/y")!,
                                                        sensitiveFields: secrets)
            #expect(sameOrigin.value(forHTTPHeaderField: "Authorization") == "Bearer secret")
            #expect(sameOrigin.value(forHTTPHeaderField: "X-Api-Key") == "key-123")
            let otherOrigin = try RedirectPolicy.request(following: 302, from: request, to: URL(string: "https://a.test/y")!,
                                                         sensitiveFields: secrets)
            for field in ["Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"] {
                #expect(otherOrigin.value(forHTTPHeaderField: field) == nil, "\(field) crossed origins")
            }
            #expect(otherOrigin.value(forHTTPHeaderField: "X-Trace") == "kept")
        }

        /// A caller's `Host` named the first origin: leaving it drops the field (curl writes
        /// the new one), else the framing check would refuse the redirected request.
        @Test func aCallersHostStaysWithItsOrigin() throws {
            var request = URLRequest(url: URL(string: "http://a.test/x")!)
            request.setValue("a.test", forHTTPHeaderField: "Host")
            let same = try RedirectPolicy.request(following: 301, from: request, to: URL(string: "http://A.test/y")!)
            #expect(same.value(forHTTPHeaderField: "Host") == "a.test")
            let other = try RedirectPolicy.request(following: 301, from: request, to: URL(string: "http://www.a.test/y")!)
            #expect(other.value(forHTTPHeaderField: "Host") == nil)
            // Reached as curl connects: `127.1` is `127.0.0.1`, the same origin.
            #expect(RedirectPolicy.isSameOrigin(URL(string: "http://127.1/")!, URL(string: "http://127.0.0.1:80/")!))
        }

        @Test(arguments: [307, 308])
        func aBodyIsNeverRedirectedFromHTTPSToHTTP(status: Int) throws {
            var request = URLRequest(url: URL(string: "https://a.test/x")!)
            request.httpMethod = "POST"
            request.httpBody = Data("secret form".utf8)
            #expect(throws: SecurityError.self) {
                try RedirectPolicy.request(following: status, from: request, to: URL(string: "http://a.test/y")!)
            }
            // A 303 drops the body: GET over http is the server's choice to make.
            let next = try RedirectPolicy.request(following: 303, from: request, to: URL(string: "http://a.test/y")!)
            #expect(next.httpBody == nil && next.httpMethod == "GET")
        }

        @Test func curlCodesMapToTheURLErrorsUsersKnow() {
            let cases: [(Int, URLError.Code)] = [
                (3, .badURL), (6, .cannotFindHost), (7, .cannotConnectToHost), (28, .timedOut),
                (18, .networkConnectionLost), (56, .networkConnectionLost), (35, .secureConnectionFailed),
                (60, .serverCertificateUntrusted), (47, .httpTooManyRedirects), (52, .badServerResponse),
                (37, .fileDoesNotExist), (61, .cannotDecodeContentData), (1, .unsupportedURL),
            ]
            for (code, expected) in cases {
                let curl = CurlError(code: code, message: "m")
                let error = URLError(curl, url: URL(string: "http://a.test/"))
                #expect(error.code == expected, "CURLcode \(code)")
                #expect(error.curlError == curl)
            }
        }

        @Test func charsetNamesMapToEncodings() {
            #expect(String.Encoding(ianaCharsetName: "UTF-8") == .utf8)
            #expect(String.Encoding(ianaCharsetName: "\"iso-8859-1\"") == .isoLatin1)
            #expect(String.Encoding(ianaCharsetName: "klingon") == nil)
        }
    }
}
