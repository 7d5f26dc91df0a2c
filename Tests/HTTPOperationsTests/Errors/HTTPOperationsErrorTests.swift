@testable import HTTPOperations
import Foundation
import HTTPTestServer
import Testing

extension AllTests {
    /// ``HTTPOperationsError``: every kind of error the library reports is caught by one
    /// protocol, with its code's name, the URL where the error knows it, and its cause.
    @Suite struct LibraryErrors {
        /// A type no test answer decodes as.
        struct Missing: Decodable, Sendable { let fieldNoAnswerHas: Int }

        /// The error `body` threw, or nil.
        static func caught(_ body: () async throws -> Void) async -> (any Error)? {
            do { try await body(); return nil } catch { return error }
        }

        @Test func everyKindIsCaughtByOneProtocol() async throws {
            let server = try TestServer.start()
            defer { server.shutdown() }
            let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
            var found: [(kind: String, error: any Error)] = []
            // Through the typed async door.
            found.append(("status", await Self.caught { _ = try await manager.get("status/404", as: Missing.self) } ?? Nope()))
            found.append(("decoding", await Self.caught { _ = try await manager.get("echo", as: Missing.self) } ?? Nope()))
            found.append(("URL", await Self.caught { _ = try await manager.get("http://[::1", as: Missing.self) } ?? Nope()))
            // Through operations.
            let large = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(1_000))))
            large.maximumBodySize = 10
            found.append(("size", try await run(large).error ?? Nope()))
            let altered = HTTPRequestOperation(request: URLRequest(url: server.url(.bytes(1_000))))
            altered.responseSerializer = HTTPResponseSerializer()
            altered.expectedSHA256 = String(repeating: "0", count: 64)
            found.append(("integrity", try await run(altered).error ?? Nope()))
            let ftp = HTTPRequestOperation(request: URLRequest(url: URL(string: "ftp://127.0.0.1/file")!))
            found.append(("scheme", try await run(ftp).error ?? Nope()))
            let failing = HTTPRequestOperation(request: URLRequest(url: server.url(.status(500))))
            let dependent = DependentRequestOperation(dependencies: [failing]) { _ in URLRequest(url: server.url(.echo)) }
            let queue = OperationQueue()
            queue.addOperation(failing)
            found.append(("dependency", try await run(dependent, on: queue).error ?? Nope()))
            // Resume data of a format this version does not read.
            var saved = ResumeData(url: URL(string: "http://a.test/")!, validator: nil, offset: 5, expectedLength: 10, destination: nil)
            saved.version = 999
            let future = try saved.encoded()
            found.append(("resume data", await Self.caught { _ = try ResumeData(from: future) } ?? Nope()))
            // A range answer the machine refused (made here: the campaigns make them on the wire).
            let answer = HTTPURLResponse(url: server.url(.bytes(10)), statusCode: 206, httpVersion: "HTTP/1.1", headerFields: nil)
            found.append(("resume", ResumeError(.rangeStartMismatch(expected: 5, received: 0), response: answer)))

            let expected: [String: (type: String, code: String, urlEnds: String?, cause: String?)] = [
                "status": ("ResponseValidationError", "unacceptableStatusCode", "/status/404", nil),
                "decoding": ("ResponseSerializationError", "decodingFailed", "/echo", "DecodingError"),
                "URL": ("RequestSerializationError", "invalidURL", nil, nil),
                "size": ("TransferError", "bodyTooLarge", "/bytes/1000", nil),
                "integrity": ("IntegrityError", "checksumMismatch", nil, nil),
                "scheme": ("SecurityError", "schemeNotAllowed", "ftp://127.0.0.1/file", nil),
                "dependency": ("DependencyError", "dependencyFailed", "/status/500", "ResponseValidationError"),
                "resume": ("ResumeError", "rangeStartMismatch", "/bytes/10", nil),
                "resume data": ("ResumeError", "unsupportedResumeDataVersion", nil, nil),
            ]
            for (kind, error) in found {
                let want = try #require(expected[kind])
                let library = error as? any HTTPOperationsError
                #expect(library != nil, "\(kind): \(type(of: error)) is not an HTTPOperationsError: \(error)")
                guard let library else { continue }
                #expect("\(type(of: library))" == want.type, "\(kind)")
                #expect(library.codeName == want.code, "\(kind): \(library)")
                if let urlEnds = want.urlEnds {
                    #expect(library.url?.absoluteString.hasSuffix(urlEnds) == true, "\(kind): \(String(describing: library.url))")
                } else {
                    #expect(library.url == nil, "\(kind): \(String(describing: library.url))")
                }
                #expect(library.underlyingError.map { "\(type(of: $0))" } == want.cause, "\(kind)")
            }
            #expect(found.map(\.kind).sorted() == expected.keys.sorted(), "a kind was not made, or made twice")
        }

        /// Stands for "nothing was thrown" where a test expected an error.
        struct Nope: Error {}
    }
}
