import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    /// Each failure is reported as what it is (issue 13): the caller acts on the type.
    @Suite struct ErrorMapping {
        struct User: Decodable, Sendable, Equatable { let id: Int }

        @Test func aValueOfAnotherTypeIsADecodingFailureNotAnEmptyBody() throws {
            do {
                let _: User = try typedResponseObject("a string", as: User.self, response: nil, data: Data("x".utf8))
                Issue.record("a String is not a User")
            } catch let error as ResponseSerializationError {
                #expect(error.code == .decodingFailed, "reported as \(error.code)")
                let detail = error.reason.detail ?? ""
                #expect(detail.contains("User") && detail.contains("String"), "\(detail)")
            }
            #expect(throws: ResponseSerializationError.self) {
                let _: User = try typedResponseObject(nil, as: User.self, response: nil, data: nil)
            }
            let none: User? = try typedResponseObject(nil, as: User?.self, response: nil, data: nil)
            #expect(none == nil)
            let user: User = try typedResponseObject(User(id: 1), as: User.self, response: nil, data: nil)
            #expect(user == User(id: 1))
        }

        /// curl says "unsupported protocol" and "receive error" for replies that are not HTTP
        /// (found by the fault matrix); its message tells those from a URL's scheme and a
        /// failed connection. The messages of libcurl 7.88.1 and of 8.14.1 (measured with each
        /// one's curl tool against the same replies: a status line `HTTP/1.1 2x0 OK`, chunk
        /// sizes `zz`, sixteen `F`s and nineteen hex digits; see Docs/Networking.md, "Which
        /// libcurl"). A scheme's name is the caller's and may hold any word: `x-response` is
        /// still a scheme.
        @Test func curlsCodesForMalformedRepliesAreBadServerResponses() {
            let cases: [(Int, String, URLError.Code)] = [
                (1, "Received HTTP/0.9 when not allowed", .badServerResponse),
                (1, "Unsupported response code in HTTP response", .badServerResponse),
                (1, "Unsupported HTTP/1 subversion in response", .badServerResponse),
                (1, "Version mismatch (from HTTP/1 to HTTP/2)", .badServerResponse),
                (56, "chunk hex-length char not a hex digit: 0x7a", .badServerResponse),
                (56, "chunk hex-length longer than 16", .badServerResponse),
                (56, "invalid chunk size: 'FFFFFFFFFFFFFFFF'", .badServerResponse),
                (1, "Protocol \"ftp\" not supported or disabled in libcurl", .unsupportedURL),
                (1, "Protocol \"x-response\" not supported", .unsupportedURL),
                (56, "Illegal or missing hexadecimal sequence in chunked-encoding", .badServerResponse),
                (56, "Malformed encoding found in chunked-encoding", .badServerResponse),
                (56, "Too large response headers: 307212 > 307200", .badServerResponse),
                (56, "Recv failure: Connection reset by peer", .networkConnectionLost),
            ]
            for (code, message, expected) in cases {
                #expect(CurlError(code: code, message: message).urlErrorCode == expected, "\(code): \(message)")
            }
        }

        @Test func aFileThatCannotBeReadIsNotALengthMismatch() {
            let missing = FileManager.default.temporaryDirectory.appendingPathComponent("httpop-missing-\(UUID())")
            let error = IntegrityCheck(expectedSHA256: String(repeating: "0", count: 64), expectedLength: 10, file: missing)
                .verify(memory: nil)
            #expect(!(error is IntegrityError), "\(String(describing: error))")
            #expect((error as? URLError)?.code == .cannotOpenFile)
        }

        @Test func anIntegrityFailureDoesNotReplaceACancellation() async throws {
            let op = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
            // Started (as `start()` leaves it), then cancelled; the transfer ended well just as
            // the cancel came; the integrity check then fails.
            op.changingPhase { $0.delivery = .running }
            op.cancel()
            op.conclude(TransferResult(data: Data("short".utf8), error: nil, completionCheck: { _ in
                IntegrityError(reason: .lengthMismatch(expected: 10, actual: 5))
            }))
            try await waitUntilFinished(op)
            #expect((op.error as? URLError)?.code == .cancelled, "\(String(describing: op.error))")
        }
    }
}

extension AllTests.ErrorMapping {
    /// There is no cache: a request that may only be answered from one fails, sending nothing.
    @Test func aCacheOnlyRequestFailsWithoutSending() async throws {
        var options = ResumableOptions()
        options.etag = .strong
        var request = URLRequest(url: testServer.url(.resumable(size: 10, options: options)))
        request.cachePolicy = .returnCacheDataDontLoad
        let outcome = try await run(HTTPRequestOperation(request: request))
        #expect(outcome.urlErrorCode == .resourceUnavailable)
        #expect(testServer.requestCount(forResumableKey: options.key) == 0)
    }
}

extension AllTests.ErrorMapping {
    /// Every error's kind is a `code` compared with static members, so adding a kind breaks
    /// no caller; reasons compare with their values.
    @Test func errorsHaveCodesThatIgnoreValuesAndReasonsThatKeepThem() {
        let resume = ResumeError(.rangeStartMismatch(expected: 1, received: 2))
        #expect(resume.code == .rangeStartMismatch)
        #expect(resume.reason == .rangeStartMismatch(expected: 1, received: 2))
        #expect(resume.reason != .rangeStartMismatch(expected: 1, received: 3))
        #expect("\(resume)".contains("from 2, but 1 bytes are held"))
        #expect(IntegrityError(reason: .lengthMismatch(expected: 2, actual: 1)).code == .lengthMismatch)
        #expect(RequestSerializationError(.invalidURL("::")).code == .invalidURL)
        let serialization = ResponseSerializationError(.invalidJSON(detail: "at 3"), response: nil, data: nil)
        #expect(serialization.code == .invalidJSON)
        #expect(serialization.reason.detail == "at 3")
        #expect(TransferError(.bodyTooLarge, url: nil, detail: "x").code == .bodyTooLarge)
        #expect(ResumeError.Code.rangeStartMismatch.description == "rangeStartMismatch")
    }
}
