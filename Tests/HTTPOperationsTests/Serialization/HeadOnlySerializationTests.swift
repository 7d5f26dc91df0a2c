import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import HTTPOperations
import Testing

/// A user's serializer: it may read anything from the response, so it must get the built one.
struct StatusEchoingSerializer: ValidatingResponseSerializer {
    var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    var acceptableContentTypes: Set<String>? = JSONResponseSerializer.jsonContentTypes

    func decode(response: URLResponse?, data: Data?) throws -> Any? {
        (response as? HTTPURLResponse)?.statusCode
    }
}

extension AllTests {
    /// The head-only path (HeadOnlySerialization.swift) may only say yes where the ordinary
    /// path, with the built `HTTPURLResponse`, says yes with the same object.
    @Suite struct HeadOnlySerialization {
        static let contentTypes: [String?] = [
            nil, "application/json", "Application/JSON", "application/json; charset=utf-8", "application/json;charset=UTF-8",
            "text/html", "\"application/json\"", "application/json ; charset=utf-8", "", "text/xml", "image/png",
            "application/x-plist", "application/octet-stream",
        ]
        static let bodies: [Data] = [
            Data(), Data(#"{"a":1}"#.utf8), Data("{nope".utf8), Data("<a/>".utf8), Data([0x89, 0x50, 0x4E, 0x47]),
        ]
        static let serializers: [@Sendable () -> any HeadOnlyDecoding] = [
            { HTTPResponseSerializer() }, { JSONResponseSerializer() }, { XMLParserResponseSerializer() },
            { XMLDocumentResponseSerializer() }, { PropertyListResponseSerializer() }, { ImageResponseSerializer() },
            { DecodableResponseSerializer<[String: Int]>() },
            // The default one judges no type; given types, it reads the head's.
            {
                var data = HTTPResponseSerializer()
                data.acceptableContentTypes = ["application/json", "image/png"]
                return data
            },
            // Settings kept as given, in mixed case: compared ignoring case on both paths.
            {
                var json = JSONResponseSerializer()
                json.acceptableContentTypes = ["Application/JSON", "TEXT/xml"]
                return json
            },
        ]

        @Test(arguments: [200, 204, 404, 500])
        func theHeadOnlyPathNeverAcceptsWhatTheOrdinaryPathRefuses(status: Int) {
            let url = URL(string: "http://serializer.test/r")!
            var acceptedFromHead = 0
            for contentType in Self.contentTypes {
                for body in Self.bodies {
                    for make in Self.serializers {
                        let serializer = make()
                        var fields: [(name: String, value: String)] = [("Server", "test"), ("Content-Length", "\(body.count)")]
                        if let contentType { fields.append(("Content-Type", contentType)) }
                        let head = ResponseHead(statusCode: status, httpVersion: "HTTP/1.1", fields: fields)
                        guard let fast = serializer.objectAcceptedFromHead(head, data: body) else { continue }
                        acceptedFromHead += 1
                        let context = "\(type(of: serializer)) \(status) \(contentType ?? "(none)") \(body.count) bytes"
                        do {
                            let ordinary = try serializer.responseObject(for: head.httpURLResponse(for: url), data: body)
                            #expect(String(describing: fast.value.map { type(of: $0) }) == String(describing: ordinary.map { type(of: $0) }), "\(context)")
                            if !(fast.value is XMLParser) {
                                #expect(String(describing: fast.value) == String(describing: ordinary), "\(context)")
                            }
                        } catch {
                            Issue.record("head-only accepted what the ordinary path refused: \(context): \(error)")
                        }
                    }
                }
            }
            // The comparison is not vacuous: 2xx responses do take the head-only path.
            #expect(acceptedFromHead >= (status < 300 ? 20 : 0), "\(acceptedFromHead) accepted from the head")
        }

        @Test func plainContentTypesAreReadAndUnusualOnesLeftToFoundation() {
            func reading(_ values: String...) -> ContentTypeReading {
                ResponseHead(statusCode: 200, httpVersion: "HTTP/1.1", fields: values.map { ("content-TYPE", $0) }).contentTypeReading
            }
            #expect(ResponseHead(statusCode: 200, httpVersion: "HTTP/1.1", fields: []).contentTypeReading == .plain(nil))
            #expect(reading("Application/JSON; charset=utf-8") == .plain("application/json"))
            #expect(reading("image/svg+xml") == .plain("image/svg+xml"))
            #expect(reading("\"text/html\"") == .unusual)
            #expect(reading("text/html ;q=1") == .unusual)
            #expect(reading("") == .unusual)
            #expect(reading("text/html", "application/json") == .unusual)
            #expect(reading("TEXT/Plain;charset=\"utf-8\"") == .plain("text/plain"))
            #expect(reading(";charset=utf-8") == .unusual)
        }

        @Test func onlyTheLibrarysOwnSerializersJudgeFromTheHead() {
            for make in Self.serializers {
                let serializer: any URLResponseSerialization = make()
                #expect(ChosenResponseSerializer(serializer).headJudge != nil, "\(type(of: serializer))")
            }
            #expect(ChosenResponseSerializer(StatusEchoingSerializer()).headJudge == nil)
            #expect(ChosenResponseSerializer(CompoundResponseSerializer([JSONResponseSerializer()])).headJudge == nil)
        }

        @Test func anAcceptedResponseIsNotBuiltUntilSomebodyAsks() async throws {
            let operation = operation(.echo)
            operation.responseSerializer = JSONResponseSerializer()
            let outcome = try await run(operation)
            guard case .success(let object) = outcome else { Issue.record("\(outcome)"); return }
            #expect((object as? [String: Any])?["method"] as? String == "GET")
            #expect(operation.unbuiltResponseHead?.statusCode == 200)
            // Asked for, it is built then, from the same head.
            #expect(operation.response?.statusCode == 200)
            #expect(operation.response?.value(forHTTPHeaderField: "content-type") == "application/json")
            #expect(operation.unbuiltResponseHead == nil)
        }

        @Test func aUsersSerializerGetsTheBuiltResponse() async throws {
            let operation = operation(.echo)
            operation.responseSerializer = StatusEchoingSerializer()
            let outcome = try await run(operation)
            guard case .success(let object) = outcome else { Issue.record("\(outcome)"); return }
            #expect(object as? Int == 200)
        }

        @Test func aRefusedResponseFailsWithTheBuiltResponseInItsError() async throws {
            let operation = operation(.jsonStatus(404))
            operation.responseSerializer = JSONResponseSerializer()
            let outcome = try await run(operation)
            let error = try #require(outcome.error as? ResponseValidationError)
            #expect(error.statusCode == 404)
            #expect(error.response.value(forHTTPHeaderField: "Content-Type") == "application/json")
        }
    }
}
