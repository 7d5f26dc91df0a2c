import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPOperations
import HTTPTestServer
import Testing

/// A user's request serializer: the library's, with a header of its own naming the body's size.
private struct SigningSerializer: URLRequestSerialization {
    var base = HTTPRequestSerializer(bodyEncoding: .json([.sortedKeys]))

    func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        var request = try base.request(bySerializing: request, withParameters: parameters)
        request.setValue("signed-\(request.httpBody?.count ?? -1)", forHTTPHeaderField: "X-Signature")
        return request
    }
}

/// A user's response serializer: validates as the library's do, and upper-cases the body.
private struct ShoutingSerializer: ValidatingResponseSerializer {
    var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    var acceptableContentTypes: Set<String>?

    func decode(response: URLResponse?, data: Data?) throws -> Any? {
        data.map { String(decoding: $0, as: UTF8.self).uppercased() }
    }
}

/// A user's request serializer that changes the verbs' requests where they are made.
private struct VersionedRequests: URLRequestSerialization {
    func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        try HTTPRequestSerializer().request(bySerializing: request, withParameters: parameters)
    }

    func request(method: String, urlString: String, parameters: Any?) throws -> URLRequest {
        var request = try HTTPRequestSerializer().request(method: method, urlString: urlString, parameters: parameters)
        request.setValue("2", forHTTPHeaderField: "X-API-Version")
        return request
    }
}

/// A user's validation beside the library's: refuses a response that does not say it is signed.
private struct SignedAnswersOnly: ValidatingResponseSerializer {
    struct Unsigned: Error {}

    var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    var acceptableContentTypes: Set<String>?

    func validate(response: URLResponse?, data: Data?) throws {
        var library = HTTPResponseSerializer()
        library.acceptableStatusCodes = acceptableStatusCodes
        try library.validate(response: response, data: data)
        guard (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Signed") != nil else { throw Unsigned() }
    }

    func decode(response: URLResponse?, data: Data?) throws -> Any? { data }
}

/// What the test server's echo endpoint says about a request.
private struct Echo: Decodable, Sendable {
    let method: String
    let headers: [String: String]
    let body: String?
}

extension AllTests {
    /// Serializers are values that plug into the manager through their protocols: a user's
    /// own works through every verb, and a copy set on a manager is the manager's own.
    @Suite struct SerializerValues {
        private func manager() -> HTTPRequestOperationManager {
            HTTPRequestOperationManager(baseURL: testServer.baseURL)
        }

        @Test func aRequestSerializerOfYourOwnBuildsTheManagersRequests() async throws {
            let manager = manager()
            manager.requestSerializer = SigningSerializer()
            let post = try await manager.post("echo", parameters: ["b": 2, "a": 1], as: Echo.self)
            #expect(post.body == #"{"a":1,"b":2}"#)
            #expect(post.headers["x-signature"] == "signed-13")
            #expect(post.headers["content-type"] == "application/json")
            let get = try await manager.get("echo", parameters: ["q": "1"], as: Echo.self)
            #expect(get.headers["x-signature"] == "signed--1")
            // A multipart body is built on what the serializer makes of the bare request.
            let form = try await manager.post("echo", parameters: ["field": "value"], constructingBodyWith: { form in
                form.appendPart(formData: Data("part".utf8), name: "part")
            }, as: Echo.self)
            #expect(form.headers["x-signature"] == "signed--1")
            #expect(form.headers["content-type"]?.hasPrefix("multipart/form-data; boundary=") == true)
            #expect(form.body?.contains("value") == true && form.body?.contains("part") == true)
        }

        @Test func aSerializerSetOnAManagerIsTheManagersOwnCopy() async throws {
            let manager = manager()
            var requests = HTTPRequestSerializer()
            requests.setValue("first", forHTTPHeaderField: "X-Version")
            manager.requestSerializer = requests
            requests.setValue("second", forHTTPHeaderField: "X-Version")
            var responses = HTTPResponseSerializer()
            manager.responseSerializer = responses
            responses.acceptableStatusCodes = []
            let echo = try await manager.get("echo", as: Echo.self)
            #expect(echo.headers["x-version"] == "first")
            // The response serializer too: the manager's still accepts a 200.
            let recorder = OutcomeRecorder()
            let operation = manager.httpRequestOperation(with: URLRequest(url: testServer.url(.echo)), success: nil, failure: nil)
            recorder.watch(operation)
            manager.enqueue(operation)
            try await recorder.done.wait(times: 1)
            #expect(recorder.outcome(of: operation)?.error == nil, "\(String(describing: recorder.outcome(of: operation)))")
        }

        @Test(arguments: ["form", "json", "plist"])
        func everyBodyEncodingRefusesADefaultFieldThatWouldSplitTheRequest(kind: String) {
            let encoding: HTTPRequestSerializer.BodyEncoding = switch kind {
            case "json": .json()
            case "plist": .propertyList()
            default: .form
            }
            var serializer = HTTPRequestSerializer(bodyEncoding: encoding)
            serializer.setValue("a\r\nX-Injected: 1", forHTTPHeaderField: "X-Evil")
            for parameters in [["a": 1], nil] as [[String: Int]?] {
                #expect(throws: SecurityError.self, "\(kind), parameters \(String(describing: parameters))") {
                    try serializer.request(method: "POST", urlString: "http://a.test/", parameters: parameters)
                }
            }
        }

        @Test func whatAUserSerializerWritesItselfIsWhatRuns() async throws {
            let manager = manager()
            manager.requestSerializer = VersionedRequests()
            let echo = try await manager.get("echo", parameters: ["q": "1"], as: Echo.self)
            #expect(echo.headers["x-api-version"] == "2")
            let unsigned = jsonOperation(.echo)
            unsigned.responseSerializer = SignedAnswersOnly()
            let outcome = try await run(unsigned)
            #expect(outcome.error is SignedAnswersOnly.Unsigned, "\(outcome)")
        }

        @Test func aResponseSerializerOfYourOwnValidatesAndKeepsARefusedBodyDecoded() async throws {
            let refused = jsonOperation(.jsonStatus(404))
            refused.responseSerializer = ShoutingSerializer()
            let error = try #require(try await run(refused).error as? ResponseValidationError)
            #expect(error.reasons == [.unacceptableStatusCode(404)])
            #expect((refused.responseObject as? String)?.contains("\"STATUS\"") == true, "\(String(describing: refused.responseObject))")
            let accepted = jsonOperation(.echo)
            var strict = ShoutingSerializer()
            strict.acceptableContentTypes = ["Application/JSON"]
            accepted.responseSerializer = strict
            guard case .success(let object) = try await run(accepted) else { Issue.record("refused"); return }
            #expect((object as? String)?.contains("\"METHOD\":\"GET\"") == true)
        }

        private func jsonOperation(_ endpoint: Endpoint) -> HTTPRequestOperation {
            HTTPRequestOperation(request: URLRequest(url: testServer.url(endpoint)))
        }
    }
}
