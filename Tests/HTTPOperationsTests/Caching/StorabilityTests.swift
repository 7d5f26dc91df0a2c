import Foundation
import Testing
@testable import HTTPOperations

extension AllTests {
    @Suite struct StorabilityTests {
        struct StoreCase: Sendable, CustomTestStringConvertible {
            var testDescription: String
            var method = "GET"
            var requestFields: [(name: String, value: String)] = []
            var status = 200
            var responseFields: [(name: String, value: String)] = []
            var expected: Bool
        }

        static let cases: [StoreCase] = [
            .init(testDescription: "plain 200 (heuristic)", expected: true),
            .init(testDescription: "request no-store", requestFields: [("Cache-Control", "no-store")],
                  responseFields: [("Cache-Control", "max-age=60")], expected: false),
            .init(testDescription: "response no-store", responseFields: [("cache-control", "max-age=60, NO-STORE")], expected: false),
            .init(testDescription: "Vary *", responseFields: [("Cache-Control", "max-age=60"), ("Vary", "Accept, *")], expected: false),
            .init(testDescription: "Vary Accept", responseFields: [("Vary", "Accept")], expected: true),
            .init(testDescription: "206", status: 206, responseFields: [("Cache-Control", "max-age=60")], expected: false),
            .init(testDescription: "304", status: 304, responseFields: [("Cache-Control", "max-age=60")], expected: false),
            .init(testDescription: "1xx", status: 103, responseFields: [("Cache-Control", "max-age=60")], expected: false),
            .init(testDescription: "POST", method: "POST", responseFields: [("Cache-Control", "max-age=60")], expected: false),
            .init(testDescription: "HEAD", method: "HEAD", responseFields: [("Cache-Control", "max-age=60")], expected: false),
            .init(testDescription: "lowercase get", method: "get", expected: true),
            .init(testDescription: "500 without freshness", status: 500, expected: false),
            .init(testDescription: "500 with max-age", status: 500, responseFields: [("Cache-Control", "max-age=60")], expected: true),
            .init(testDescription: "500 with Expires", status: 500, responseFields: [("Expires", "0")], expected: true),
            .init(testDescription: "302 with public", status: 302, responseFields: [("Cache-Control", "public")], expected: true),
            .init(testDescription: "302 plain", status: 302, expected: false),
            .init(testDescription: "private", responseFields: [("Cache-Control", "private, max-age=60")], expected: true),
            .init(testDescription: "private alone on 500", status: 500, responseFields: [("Cache-Control", "private")], expected: true),
            .init(testDescription: "Authorization", requestFields: [("Authorization", "Bearer x")],
                  responseFields: [("Cache-Control", "max-age=60")], expected: true),
        ]

        @Test(arguments: cases)
        func canStore(_ testCase: StoreCase) {
            #expect(HTTPCachePolicy.canStore(
                method: testCase.method, requestFields: testCase.requestFields,
                status: testCase.status, responseFields: testCase.responseFields) == testCase.expected)
        }

        @Test(arguments: [
            ("POST", 200, true), ("PUT", 204, true), ("DELETE", 301, true), ("PATCH", 399, true),
            ("POST", 400, false), ("POST", 500, false), ("POST", 100, false),
            ("GET", 200, false), ("HEAD", 200, false), ("OPTIONS", 200, false), ("TRACE", 200, false),
            ("post", 200, true), ("FOO", 200, true),
        ])
        func invalidation(method: String, status: Int, expected: Bool) {
            #expect(HTTPCachePolicy.invalidates(method: method, status: status) == expected)
        }
    }
}
