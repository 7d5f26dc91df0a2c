import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import HTTPOperations
import Testing

/// A response for serializer tests.
func httpResponse(_ status: Int = 200, contentType: String? = "application/json", headers: [String: String] = [:]) -> HTTPURLResponse {
    var fields = headers
    if let contentType { fields["Content-Type"] = contentType }
    return HTTPURLResponse(url: URL(string: "http://serializer.test/r")!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)!
}

extension AllTests {
    @Suite struct ResponseSerializers {
        @Test func theBaseSerializerReportsStatusAndContentTypeTogether() {
            var serializer = HTTPResponseSerializer()
            serializer.acceptableContentTypes = ["application/json"]
            #expect(throws: Never.self) { try serializer.responseObject(for: httpResponse(204, contentType: nil), data: Data()) }
            do {
                _ = try serializer.responseObject(for: httpResponse(500, contentType: "text/html"), data: Data("oops".utf8))
                Issue.record("expected a validation error")
            } catch let error as ResponseValidationError {
                #expect(error.reasons == [.unacceptableStatusCode(500), .unacceptableContentType("text/html", acceptable: ["application/json"])])
                #expect(error.data == Data("oops".utf8))
                #expect(error.response.statusCode == 500)
            } catch {
                Issue.record("unexpected \(error)")
            }
        }

        @Test(arguments: ["application/json", "text/json", "text/javascript", "Application/JSON"])
        func jsonAcceptsItsContentTypes(type: String) throws {
            let object = try JSONResponseSerializer().responseObject(for: httpResponse(contentType: type), data: Data(#"{"a":1}"#.utf8))
            #expect((object as? [String: Any])?["a"] as? Int == 1)
        }

        @Test func jsonRefusesOtherContentTypes() {
            #expect(throws: ResponseValidationError.self) {
                try JSONResponseSerializer().responseObject(for: httpResponse(contentType: "text/html"), data: Data("{}".utf8))
            }
        }

        @Test(arguments: ["", " ", " \n\t "])
        func anEmptyJSONBodyIsNoObjectAndNoError(body: String) throws {
            #expect(try JSONResponseSerializer().responseObject(for: httpResponse(), data: Data(body.utf8)) == nil)
        }

        @Test func invalidJSONIsATypedError() {
            do {
                _ = try JSONResponseSerializer().responseObject(for: httpResponse(), data: Data("{nope".utf8))
                Issue.record("expected an error")
            } catch let error as ResponseSerializationError {
                #expect(error.code == .invalidJSON, "wrong reason \(error.code)")
                #expect(error.data == Data("{nope".utf8))
            } catch {
                Issue.record("unexpected \(error)")
            }
        }

        @Test func nullsAreRemovedRecursivelyThroughArrays() throws {
            var serializer = JSONResponseSerializer()
            serializer.removesKeysWithNullValues = true
            let body = #"{"a":null,"b":{"c":null,"d":1},"e":[{"f":null,"g":2},null,3]}"#
            let object = try #require(try serializer.responseObject(for: httpResponse(), data: Data(body.utf8)) as? [String: Any])
            #expect(object["a"] == nil)
            #expect((object["b"] as? [String: Any])?.keys.sorted() == ["d"])
            let array = try #require(object["e"] as? [Any])
            #expect((array[0] as? [String: Any])?.keys.sorted() == ["g"])
            #expect(array[1] is NSNull, "nulls in arrays are values, not keys")
            #expect(array.count == 3)
        }

        @Test func propertyListsDecodeAndCheckTheirFormat() throws {
            let plist: [String: Any] = ["name": "ada", "n": 3]
            let xml = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
            let binary = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
            var serializer = PropertyListResponseSerializer()
            let response = httpResponse(contentType: "application/x-plist")
            #expect((try serializer.responseObject(for: response, data: xml) as? [String: Any])?["name"] as? String == "ada")
            #expect((try serializer.responseObject(for: response, data: binary) as? [String: Any])?["n"] as? Int == 3)
            serializer.format = .binary
            #expect(throws: ResponseSerializationError.self) { try serializer.responseObject(for: response, data: xml) }
            #expect(throws: ResponseSerializationError.self) { try serializer.responseObject(for: response, data: Data("not a plist".utf8)) }
        }

        @Test func xmlBecomesAParserOrADocument() throws {
            let body = Data("<root><item id=\"1\">one</item></root>".utf8)
            let response = httpResponse(contentType: "text/xml")
            #expect(try XMLParserResponseSerializer().responseObject(for: response, data: body) is XMLParser)
            let document = try #require(try XMLDocumentResponseSerializer().responseObject(for: response, data: body) as? XMLDocument)
            #expect(document.rootElement()?.name == "root")
            // XMLDocument(data:) here recovers from these instead of throwing, and crashes on the
            // root-less declaration; the serializer must refuse them all with a typed error.
            for malformed in ["no markup at all", "<root><unclosed></root>", "<a></b>", "<?xml version=\"1.0\"?>", "<", "<a/><b/>"] {
                #expect(throws: ResponseSerializationError.self, "\(malformed)") {
                    try XMLDocumentResponseSerializer().responseObject(for: response, data: Data(malformed.utf8))
                }
            }
            // Where the parser raised an error, it is the underlying one, not only its words.
            let mismatched = #expect(throws: ResponseSerializationError.self) {
                try XMLDocumentResponseSerializer().responseObject(for: response, data: Data("<a></b>".utf8))
            }
            #expect(mismatched?.code == .invalidXML)
            #expect((mismatched?.underlyingError as? NSError)?.domain == XMLParser.errorDomain,
                    "\(String(describing: mismatched?.underlyingError))")
            #expect(throws: ResponseValidationError.self) {
                try XMLParserResponseSerializer().responseObject(for: httpResponse(contentType: "application/json"), data: body)
            }
        }

        @Test func xmlThatWouldCrashFoundationIsRefusedWithATypedError() throws {
            // Found by the fuzz test below: corelibs' XMLParser traps on invalid UTF-8 in names.
            let crasher = Data([0x3C, 0x72, 0xC3, 0x6F, 0x74, 0x3E, 0x3C, 0x61, 0x3E, 0x31, 0x3C, 0x2F, 0x61, 0x3E,
                                0x3C, 0xEB, 0x2F, 0x3E, 0x3C, 0x2F, 0x72, 0xF5, 0x6F, 0x74, 0x3E])
            let response = httpResponse(contentType: "application/xml")
            #expect(throws: ResponseSerializationError.self) { try XMLParserResponseSerializer().responseObject(for: response, data: crasher) }
            #expect(throws: ResponseSerializationError.self) { try XMLDocumentResponseSerializer().responseObject(for: response, data: crasher) }
            // A declared single-byte encoding is honoured.
            let latin1 = Data("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r>caf".utf8) + Data([0xE9]) + Data("</r>".utf8)
            let document = try #require(try XMLDocumentResponseSerializer().responseObject(for: response, data: latin1) as? XMLDocument)
            #expect(document.rootElement()?.stringValue == "café")
        }

        /// Found by FuzzTests (a mutant of Tests/FuzzCorpus/xml/02.xml): a declaration that is
        /// not one (`<?xml` then a non-space byte) still named ISO-8859-1, so invalid UTF-8
        /// passed the check, and `XMLParser` trapped in its processing-instruction callback.
        /// In a child process, so that a crash fails this test instead of ending the run.
        @Test func aMalformedDeclarationCannotLetInvalidUTF8Through() async {
            await #expect(processExitsWith: .success) {
                final class Driver: NSObject, XMLParserDelegate {}
                let bodies = [
                    Data("<?xml".utf8) + Data([0xED]) + Data("version=\"1.0\" encoding=\"ISO-8859-1\"?><a>caf".utf8) + Data([0xE9]) + Data("</a>".utf8),
                    Data("<?xml version=\";.0\" encoding=\"ISO-8859-1\"?><".utf8) + Data([0xED]) + Data(">".utf8) + Data([0xE9]) + Data("</a>".utf8),
                ]
                let response = HTTPURLResponse(url: URL(string: "http://x.test/")!, statusCode: 200, httpVersion: nil,
                                               headerFields: ["Content-Type": "application/xml"])
                for data in bodies {
                    for serializer in [XMLDocumentResponseSerializer(), XMLParserResponseSerializer()] as [any ValidatingResponseSerializer] {
                        do {
                            // A caller drives the parser it gets, with a delegate, as XMLParser is used;
                            // what it parses is valid UTF-8 (here, refused or transcoded), never a crash.
                            if let parser = try serializer.responseObject(for: response, data: data) as? XMLParser {
                                let driver = Driver()
                                parser.delegate = driver
                                _ = parser.parse()
                            }
                        } catch is ResponseSerializationError {
                            continue
                        } catch {
                            exit(2)
                        }
                    }
                }
            }
            #expect(XMLEncodingCheck.declaration(Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>".utf8))?.encoding == "iso-8859-1")
            // Found next by FuzzTests: libxml2 ignores a declaration with a malformed version.
            #expect(XMLEncodingCheck.declaration(Array("<?xml version=\";.0\" encoding=\"ISO-8859-1\"?><a/>".utf8)) == nil)
        }

        /// Found by FuzzTests (`<?xml?><root …`): libxml2 hands a processing instruction with
        /// no data to XMLParser as a null pointer, and XMLParser reads it as a C string.
        @Test func aProcessingInstructionWithoutDataIsRefusedNotACrash() async {
            await #expect(processExitsWith: .success) {
                final class Driver: NSObject, XMLParserDelegate {}
                let response = HTTPURLResponse(url: URL(string: "http://x.test/")!, statusCode: 200, httpVersion: nil,
                                               headerFields: ["Content-Type": "application/xml"])
                for body in ["<?xml?><root/>", "<r><?x?></r>", "<r><?x\u{E9}?></r>"] {
                    for serializer in [XMLDocumentResponseSerializer(), XMLParserResponseSerializer()] as [any ValidatingResponseSerializer] {
                        do {
                            if let parser = try serializer.responseObject(for: response, data: Data(body.utf8)) as? XMLParser {
                                let driver = Driver()
                                parser.delegate = driver
                                _ = parser.parse()
                            }
                            exit(3)
                        } catch is ResponseSerializationError {
                            continue
                        } catch {
                            exit(2)
                        }
                    }
                }
            }
            // With data, in a comment or in CDATA it is no problem.
            for body in ["<r><?x y?></r>", "<r><!-- <?x?> --></r>", "<r><![CDATA[<?x?>]]></r>"] {
                #expect(XMLEncodingCheck.processingInstructionWithoutData(in: Data(body.utf8)) == nil, "\(body)")
            }
        }

        @Test(arguments: ["png", "jpeg", "gif", "bmp", "tiff", "ico", "webp", "webpLossy"])
        func imageHeadersGiveFormatAndSize(name: String) throws {
            let encoded = try #require(ImageFixtures.base64[name])
            let data = try #require(Data(base64Encoded: encoded))
            let format = name == "webpLossy" ? "webp" : name
            let image = try #require(try ImageResponseSerializer().responseObject(for: httpResponse(contentType: "image/\(format)"), data: data) as? Image)
            #expect(image.format.rawValue == format)
            #expect(image.width == 7)
            #expect(image.height == 3)
            #expect(image.data == data)
        }

        @Test func notAnImageIsATypedError() {
            #expect(throws: ResponseSerializationError.self) {
                try ImageResponseSerializer().responseObject(for: httpResponse(contentType: "image/png"), data: Data("GIF8".utf8))
            }
        }

        @Test func theFirstSerializerThatAcceptsWins() throws {
            let compound = CompoundResponseSerializer([JSONResponseSerializer(), XMLDocumentResponseSerializer(), HTTPResponseSerializer()])
            #expect(try compound.responseObject(for: httpResponse(contentType: "text/xml"), data: Data("<a/>".utf8)) is XMLDocument)
            #expect(try compound.responseObject(for: httpResponse(contentType: "text/plain"), data: Data("x".utf8)) as? Data == Data("x".utf8))
            let strict = CompoundResponseSerializer([JSONResponseSerializer(), XMLDocumentResponseSerializer()])
            do {
                _ = try strict.responseObject(for: httpResponse(contentType: "text/plain"), data: Data("x".utf8))
                Issue.record("expected an error")
            } catch let error as ResponseSerializationError {
                #expect(error.code == .noSerializerAccepted)
                #expect(error.reason.underlyingErrors.count == 2)
            }
        }

        struct User: Decodable, Equatable {
            let name: String
            let createdAt: Date
        }

        @Test func decodableValuesDecodeWithTheConfiguredDecoder() throws {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            let serializer = DecodableResponseSerializer<User>(decoder: decoder)
            let user = try serializer.value(for: httpResponse(), data: Data(#"{"name":"ada","createdAt":0}"#.utf8))
            #expect(user == User(name: "ada", createdAt: Date(timeIntervalSince1970: 0)))
            #expect(throws: ResponseSerializationError.self) { try serializer.value(for: httpResponse(), data: Data(#"{"name":1}"#.utf8)) }
            #expect(throws: ResponseSerializationError.self) { try serializer.value(for: httpResponse(), data: Data()) }
        }

        @Test func emptyBodiesDecodeWhereTheTypeAllowsIt() throws {
            let none: User? = try DecodableResponseSerializer<User?>().value(for: httpResponse(204, contentType: nil), data: Data())
            #expect(none == nil)
            #expect(try DecodableResponseSerializer<EmptyResponse>().value(for: httpResponse(205, contentType: nil), data: Data()) == EmptyResponse())
            let head = httpResponse(200, contentType: "application/json", headers: ["Content-Length": "120"])
            #expect(try DecodableResponseSerializer<EmptyResponse>().value(for: head, data: Data()) == EmptyResponse())
            #expect(throws: ResponseSerializationError.self) {
                try DecodableResponseSerializer<EmptyResponse>().value(for: httpResponse(200), data: Data())
            }
        }

        @Test(arguments: [404, 422, 503])
        func aFailedResponseKeepsItsBodyAndItsDecodedObject(status: Int) async throws {
            let op = operation(.jsonStatus(status))
            op.responseSerializer = JSONResponseSerializer()
            let error = try #require(try await run(op).error as? ResponseValidationError)
            #expect(error.statusCode == status)
            #expect(error.data.map { String(decoding: $0, as: UTF8.self) }?.contains("explained") == true)
            #expect((op.responseObject as? [String: Any])?["message"] as? String == "error \(status) explained")
        }

        /// Random, truncated and mutated bytes: every serializer answers with a value or a
        /// typed error, and never crashes.
        @Test func serializersSurviveRandomAndTruncatedBytes() throws {
            let serializers: [(String, any URLResponseSerialization)] = [
                ("application/json", JSONResponseSerializer()), ("application/x-plist", PropertyListResponseSerializer()),
                ("text/xml", XMLDocumentResponseSerializer()), ("text/xml", XMLParserResponseSerializer()),
                ("image/png", ImageResponseSerializer()), ("application/json", DecodableResponseSerializer<User>()),
            ]
            var seeds = [Data(#"{"name":"ada","createdAt":0,"list":[1,2,{"x":null}]}"#.utf8),
                         Data("<root><a>1</a><b/></root>".utf8),
                         try PropertyListSerialization.data(fromPropertyList: ["k": [1, 2]], format: .binary, options: 0)]
            seeds += ImageFixtures.base64.values.compactMap { Data(base64Encoded: $0) }
            var generator = SeededGenerator(for: "serializers fuzz")
            var inputs: [Data] = []
            for seed in seeds {
                inputs += (0..<seed.count).map { seed.prefix($0) }                         // every truncation
                for _ in 0..<50 {                                                           // random mutations
                    var mutated = seed
                    for _ in 0..<3 { mutated[Int(generator.next() % UInt64(mutated.count))] = UInt8.random(in: 0...255, using: &generator) }
                    inputs.append(mutated)
                }
            }
            inputs += (0..<200).map { _ in Data((0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
            for (contentType, serializer) in serializers {
                for input in inputs {
                    do {
                        _ = try serializer.responseObject(for: httpResponse(contentType: contentType), data: input)
                    } catch is ResponseSerializationError {
                    } catch {
                        Issue.record("\(type(of: serializer)) threw an untyped \(error)")
                    }
                }
            }
        }
    }
}
