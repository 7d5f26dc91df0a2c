import Foundation
import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests {
    @Suite struct RequestSerializers {
        @Test func queryStringsFollowAFNetworking() {
            let cases: [([String: Any], String)] = [
            (["key": "value"], "key=value"),
            (["b": 1, "a": 2], "a=2&b=1"),
            (["key": ["sub": "v", "a": 1]], "key%5Ba%5D=1&key%5Bsub%5D=v"),
            (["k": [1, 2]], "k%5B%5D=1&k%5B%5D=2"),
            (["k": Set(["b", "a"])], "k=a&k=b"),
            (["k": NSNull()], "k"),
            (["q": "a b&c=d/e?f#g"], "q=a%20b%26c%3Dd/e?f%23g"),
            (["q": "100%"], "q=100%25"),
            (["q": "a%20b"], "q=a%2520b"),
            (["u": "-._~"], "u=-._~"),
            (["t": true, "f": false], "f=0&t=1"),
            (["a": [["b": 1]]], "a%5B%5D%5Bb%5D=1"),
            (["e": "👨‍👩‍👧 ✓"], "e=%F0%9F%91%A8%E2%80%8D%F0%9F%91%A9%E2%80%8D%F0%9F%91%A7%20%E2%9C%93"),
            (["ключ": "значение"], "%D0%BA%D0%BB%D1%8E%D1%87=%D0%B7%D0%BD%D0%B0%D1%87%D0%B5%D0%BD%D0%B8%D0%B5"),
            ]
            for (parameters, expected) in cases {
                #expect(QueryString.make(from: parameters) == expected)
            }
        }

        @Test func queryMethodsAppendToTheURL() throws {
            let serializer = HTTPRequestSerializer()
            let get = try serializer.request(method: "GET", urlString: "http://a.test/p", parameters: ["x": 1])
            #expect(get.url?.absoluteString == "http://a.test/p?x=1")
            #expect(get.httpBody == nil)
            let withQuery = try serializer.request(method: "delete", urlString: "http://a.test/p?y=2", parameters: ["x": 1])
            #expect(withQuery.url?.absoluteString == "http://a.test/p?y=2&x=1")
            #expect(withQuery.httpMethod == "DELETE")
            let empty = try serializer.request(method: "HEAD", urlString: "http://a.test/p", parameters: [String: Any]())
            #expect(empty.url?.absoluteString == "http://a.test/p")
        }

        /// The query goes before the URL's fragment (it went after it, where it is no query:
        /// the server got the path without the parameters, and no error).
        @Test func theQueryGoesBeforeTheFragment() throws {
            let serializer = HTTPRequestSerializer()
            let get = try serializer.request(method: "GET", urlString: "http://a.test/p#top", parameters: ["x": 1])
            #expect(get.url?.absoluteString == "http://a.test/p?x=1#top")
            #expect(get.url?.query == "x=1")
            let withQuery = try serializer.request(method: "GET", urlString: "http://a.test/p?y=2#top", parameters: ["x": 1])
            #expect(withQuery.url?.absoluteString == "http://a.test/p?y=2&x=1#top")
        }

        /// A form body is escaped in the charset it is labelled with: `é` in ISO-8859-1 is
        /// `%E9` (it was `%C3%A9`, UTF-8's bytes, labelled `iso-8859-1`: a server read "Ã©").
        /// Text the charset cannot write is a typed error; a charset no form can be sent in
        /// (UTF-16, as HTML says) or without a known name is sent, and labelled, as UTF-8.
        @Test func aFormBodyIsEscapedInTheCharsetItIsLabelledWith() throws {
            var latin1 = HTTPRequestSerializer()
            latin1.stringEncoding = .isoLatin1
            let post = try latin1.request(method: "POST", urlString: "http://a.test/p", parameters: ["q": "é", "r": "a b"])
            #expect(post.httpBody == Data("q=%E9&r=a%20b".utf8))
            #expect(post.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded; charset=iso-8859-1")
            #expect(throws: RequestSerializationError.self) {
                try latin1.request(method: "POST", urlString: "http://a.test/p", parameters: ["q": "€"])
            }
            for encoding in [String.Encoding.utf16, .utf32, .symbol] {
                var serializer = HTTPRequestSerializer()
                serializer.stringEncoding = encoding
                let sent = try serializer.request(method: "POST", urlString: "http://a.test/p", parameters: ["q": "é"])
                #expect(sent.httpBody == Data("q=%C3%A9".utf8), "\(encoding)")
                #expect(sent.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded; charset=utf-8", "\(encoding)")
            }
            // The query of a GET is UTF-8 whatever the form's charset (RFC 3986 §2.5).
            let get = try latin1.request(method: "GET", urlString: "http://a.test/p", parameters: ["q": "é"])
            #expect(get.url?.query == "q=%C3%A9")
        }

        @Test func otherMethodsGetAFormBody() throws {
            let serializer = HTTPRequestSerializer()
            let post = try serializer.request(method: "POST", urlString: "http://a.test/p", parameters: ["b": "2 3", "a": 1])
            #expect(post.url?.absoluteString == "http://a.test/p")
            #expect(post.httpBody == Data("a=1&b=2%203".utf8))
            #expect(post.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded; charset=utf-8")
            let empty = try serializer.request(method: "PUT", urlString: "http://a.test/p", parameters: [String: Any]())
            #expect(empty.httpBody == Data(), "an empty parameter set is a valid empty body")
            let none = try serializer.request(method: "POST", urlString: "http://a.test/p")
            #expect(none.httpBody == nil)
            var preset = URLRequest(url: URL(string: "http://a.test/p")!)
            preset.httpMethod = "PATCH"
            preset.setValue("text/plain", forHTTPHeaderField: "Content-Type")
            #expect(try serializer.request(bySerializing: preset, withParameters: ["a": 1]).value(forHTTPHeaderField: "Content-Type") == "text/plain")
        }

        @Test func defaultsOnlyFillGaps() throws {
            var serializer = HTTPRequestSerializer()
            #expect(serializer.value(forHTTPHeaderField: "user-agent")?.hasPrefix("HTTPOperations/\(httpOperationsVersion) (Linux") == true)
            #expect(serializer.value(forHTTPHeaderField: "Accept-Language")?.contains(";q=1") == true)
            serializer.setValue("yes", forHTTPHeaderField: "X-Default")
            serializer.timeoutInterval = 7
            var request = URLRequest(url: URL(string: "http://a.test/")!)
            request.setValue("mine/1.0", forHTTPHeaderField: "User-Agent")
            let built = try serializer.request(bySerializing: request, withParameters: nil)
            #expect(built.value(forHTTPHeaderField: "User-Agent") == "mine/1.0")
            #expect(built.value(forHTTPHeaderField: "X-Default") == "yes")
            #expect(built.timeoutInterval == 7)
            serializer.setAuthorizationHeaderField(username: "ada", password: "pw")
            #expect(serializer.value(forHTTPHeaderField: "Authorization") == "Basic YWRhOnB3")
            serializer.clearAuthorizationHeader()
            #expect(serializer.value(forHTTPHeaderField: "Authorization") == nil)
        }

        struct Refused: Error {}

        @Test func aCustomQueryStringBlockIsUsedAndMayThrow() throws {
            var serializer = HTTPRequestSerializer()
            serializer.queryStringSerialization = { _, parameters in "custom=\((parameters as? [String: Any])?.count ?? 0)" }
            #expect(try serializer.request(method: "GET", urlString: "http://a.test/", parameters: ["a": 1]).url?.query == "custom=1")
            serializer.queryStringSerialization = { _, _ in throw Refused() }
            #expect(throws: RequestSerializationError.self) { try serializer.request(method: "GET", urlString: "http://a.test/", parameters: ["a": 1]) }
        }

        @Test func anInvalidURLIsATypedError() {
            #expect(throws: RequestSerializationError.self) { try HTTPRequestSerializer().request(method: "GET", urlString: "http://[::1") }
        }

        @Test func jsonAndPropertyListBodies() throws {
            let json = try HTTPRequestSerializer(bodyEncoding: .json([.sortedKeys])).request(method: "POST", urlString: "http://a.test/", parameters: ["b": [1, 2], "a": "x"])
            #expect(json.httpBody == Data(#"{"a":"x","b":[1,2]}"#.utf8))
            #expect(json.value(forHTTPHeaderField: "Content-Type") == "application/json")
            let jsonGet = try HTTPRequestSerializer(bodyEncoding: .json()).request(method: "GET", urlString: "http://a.test/", parameters: ["a": 1])
            #expect(jsonGet.url?.query == "a=1")
            #expect(throws: RequestSerializationError.self) {
                try HTTPRequestSerializer(bodyEncoding: .json()).request(method: "POST", urlString: "http://a.test/", parameters: ["when": Date()])
            }
            let plist = try HTTPRequestSerializer(bodyEncoding: .propertyList()).request(method: "PUT", urlString: "http://a.test/", parameters: ["a": 1])
            #expect(plist.value(forHTTPHeaderField: "Content-Type") == "application/x-plist")
            let decoded = try PropertyListSerialization.propertyList(from: try #require(plist.httpBody), format: nil) as? [String: Any]
            #expect(decoded?["a"] as? Int == 1)
            #expect(throws: RequestSerializationError.self) {
                try HTTPRequestSerializer(bodyEncoding: .propertyList()).request(method: "PUT", urlString: "http://a.test/", parameters: ["a": NSNull()])
            }
        }

        /// `depth` arrays, each holding the next.
        static func nested(_ depth: Int) -> Any {
            var value: Any = [Any]()
            for _ in 1..<depth { value = [value] }
            return value
        }

        /// JSON bodies: what JSON cannot hold is a typed error wherever it sits in the tree, never
        /// a trap and never bytes that are not JSON. Foundation's writer stops the program on a
        /// top-level value that is no array or dictionary (unless fragments are allowed),
        /// recurses without limit (a deep enough tree overflows the stack) and writes a
        /// `Decimal` NaN as `NaN`; for the rest it throws, and the error carries what it threw.
        @Test func whatJSONCannotHoldIsATypedErrorWhereverItSits() {
            struct Opaque {}
            let refused: [(String, Any, JSONSerialization.WritingOptions)] = [
                ("a decimal NaN", ["x": Decimal.nan], []),
                ("a decimal NaN in an array", ["x": [Decimal(1), Decimal.nan]], []),
                ("an NSDecimalNumber NaN", ["x": NSDecimalNumber.notANumber], []),
                ("a decimal NaN at the top, fragments allowed", Decimal.nan, .fragmentsAllowed),
                ("513 arrays deep (Foundation's reader takes 512)", Self.nested(513), []),
                ("513 objects deep", (1..<513).reduce(["k": 1] as Any) { inner, _ in ["k": inner] }, []),
                ("a date", ["when": Date()], []),
                ("a date in an array", ["list": [1, Date()] as [Any]], []),
                ("not a number", ["x": Double.nan], []),
                ("an infinity in an array", [Double.infinity], []),
                ("a number as a key", [1: "one"], []),
                ("a number as a nested key", ["a": [2: "two"]], []),
                ("a value of no JSON type", ["a": Opaque()], []),
                ("a string at the top", "text", []),
                ("a number at the top", 42, []),
                ("a set at the top", Set(["a"]), []),
                ("a date at the top, fragments allowed", Date(), .fragmentsAllowed),
                ("a date in a dictionary, fragments allowed", ["when": Date()], .fragmentsAllowed),
            ]
            for (name, parameters, options) in refused {
                let serializer = HTTPRequestSerializer(bodyEncoding: .json(options))
                #expect(throws: RequestSerializationError.self, "\(name)") {
                    try serializer.request(method: "POST", urlString: "http://a.test/", parameters: parameters)
                }
                do {
                    _ = try serializer.request(method: "POST", urlString: "http://a.test/", parameters: parameters)
                } catch let error as RequestSerializationError {
                    #expect(error.code == .invalidJSONObject, "\(name): \(error)")
                } catch {
                    Issue.record("\(name): \(error)")
                }
            }
            // What Foundation's writer refuses itself comes with its reason.
            let writerRefused = #expect(throws: RequestSerializationError.self) {
                try HTTPRequestSerializer(bodyEncoding: .json()).request(method: "POST", urlString: "http://a.test/",
                                                                         parameters: ["when": Date()])
            }
            #expect(writerRefused?.underlying != nil)
        }

        /// The deepest tree Foundation reads back (512 arrays or objects, whatever the value
        /// innermost), and decimals that are numbers, are bodies.
        @Test func jsonAsDeepAsFoundationReadsIsABody() throws {
            let serializer = HTTPRequestSerializer(bodyEncoding: .json())
            let deep = try #require(try serializer.request(method: "POST", urlString: "http://a.test/", parameters: Self.nested(512)).httpBody)
            #expect(deep == Data((String(repeating: "[", count: 512) + String(repeating: "]", count: 512)).utf8))
            #expect(try JSONSerialization.jsonObject(with: deep) is [Any])
            let aroundAValue = (1..<512).reduce([1] as Any) { inner, _ in [inner] }
            let deepWithValue = try #require(try serializer.request(method: "POST", urlString: "http://a.test/", parameters: aroundAValue).httpBody)
            #expect(deepWithValue == Data((String(repeating: "[", count: 512) + "1" + String(repeating: "]", count: 512)).utf8))
            #expect(try JSONSerialization.jsonObject(with: deepWithValue) is [Any])
            let objects = (1..<512).reduce(["k": 1] as Any) { inner, _ in ["k": inner] }
            let deepObjects = try #require(try serializer.request(method: "POST", urlString: "http://a.test/", parameters: objects).httpBody)
            #expect(try JSONSerialization.jsonObject(with: deepObjects) is [String: Any])
            let decimals = try serializer.request(method: "POST", urlString: "http://a.test/", parameters: ["d": Decimal(string: "1.5")!])
            #expect(decimals.httpBody == Data(#"{"d":1.5}"#.utf8))
        }

        /// A tree far too deep for the writer is refused without a walk through Foundation's
        /// bridging, which recurses without a limit of its own, whatever its containers.
        /// In child processes that exit before the tree is released (releasing it recurses
        /// once per level too).
        @Test func aTreeFarTooDeepIsRefusedWhateverItsContainers() async {
            await #expect(processExitsWith: .success) { exit(Self.refusesATreeFarTooDeep(ofArrays: true) ? 0 : 1) }
            await #expect(processExitsWith: .success) { exit(Self.refusesATreeFarTooDeep(ofArrays: false) ? 0 : 1) }
        }

        /// Whether the JSON serializer refuses 20,000 optional arrays (or objects) each in the next.
        static func refusesATreeFarTooDeep(ofArrays arrays: Bool) -> Bool {
            var value: Any = [Any?]()
            for _ in 0..<20_000 {
                value = arrays ? [value] as [Any?] : ["k": value] as [String: Any?]
            }
            let sent = try? HTTPRequestSerializer(bodyEncoding: .json()).request(method: "POST", urlString: "http://a.test/",
                                                                                 parameters: value)
            return sent == nil
        }

        /// `.fragmentsAllowed` means what it says: a top-level string, number, boolean or null is
        /// a body.
        @Test func aFragmentIsABodyWhenTheOptionsAllowIt() throws {
            let serializer = HTTPRequestSerializer(bodyEncoding: .json(.fragmentsAllowed))
            let text = try serializer.request(method: "POST", urlString: "http://a.test/", parameters: "text")
            #expect(text.httpBody == Data(#""text""#.utf8))
            #expect(text.value(forHTTPHeaderField: "Content-Type") == "application/json")
            let number = try serializer.request(method: "PUT", urlString: "http://a.test/", parameters: 42)
            #expect(number.httpBody == Data("42".utf8))
            let null = try serializer.request(method: "PUT", urlString: "http://a.test/", parameters: NSNull())
            #expect(null.httpBody == Data("null".utf8))
            let yes = try serializer.request(method: "PUT", urlString: "http://a.test/", parameters: true)
            #expect(yes.httpBody == Data("true".utf8))
            let object = try serializer.request(method: "POST", urlString: "http://a.test/", parameters: ["a": 1])
            #expect(object.httpBody == Data(#"{"a":1}"#.utf8))
        }

        @Test(arguments: ["form", "json", "plist"])
        func bodiesRoundTripThroughTheServer(kind: String) async throws {
            let encoding: HTTPRequestSerializer.BodyEncoding = switch kind {
            case "json": .json()
            case "plist": .propertyList()
            default: .form
            }
            let serializer = HTTPRequestSerializer(bodyEncoding: encoding)
            let parameters: [String: Any] = ["name": "ünïcødé ✓", "list": [1, 2]]
            let request = try serializer.request(method: "POST", urlString: testServer.url(.echo).absoluteString, parameters: parameters)
            let echo = try echoed(try await run(HTTPRequestOperation(request: request)))
            let body = try #require((echo["body"] as? String)?.data(using: .utf8))
            switch kind {
            case "json":
                let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
                #expect(object?["name"] as? String == "ünïcødé ✓")
            case "plist":
                let object = try PropertyListSerialization.propertyList(from: body, format: nil) as? [String: Any]
                #expect(object?["list"] as? [Int] == [1, 2])
            default:
                #expect(String(decoding: body, as: UTF8.self) == "list%5B%5D=1&list%5B%5D=2&name=%C3%BCn%C3%AFc%C3%B8d%C3%A9%20%E2%9C%93")
            }
        }
    }
}
