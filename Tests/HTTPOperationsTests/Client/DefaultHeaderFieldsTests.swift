import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// The request serializer's default header fields (issue 27): applied in one step from
    /// fields prepared when they change, they must come out as Foundation's own
    /// `setValue(_:forHTTPHeaderField:)`, one field at a time, makes them.
    @Suite struct DefaultHeaderFields {
        static let scenarios = 2_000

        /// Over seeded random defaults (set, replaced in another case, removed; values
        /// Foundation refuses) and requests (with no fields, or fields that overlap the
        /// defaults in another case), `applyingDefaults(to:)` gives the fields Foundation's
        /// one-at-a-time reference gives, after every change of the defaults.
        @Test func theyFillGapsAsFoundationWould() {
            var random = SeededGenerator(for: "default header fields")
            let names = ["Accept", "accept", "User-Agent", "user-agent", "X-Trace", "X-TRACE", "Accept-Language", "x-a-b"]
            let values = ["v1", "text/html, */*;q=0.8", "", "bad\r\nvalue", "folded\r\n value", "caf\u{E9}"]
            var differences: [String] = []
            for scenario in 0..<Self.scenarios {
                let encodings: [HTTPRequestSerializer.BodyEncoding] = [.form, .json(), .propertyList()]
                var serializer = HTTPRequestSerializer(bodyEncoding: encodings.randomElement(using: &random)!)
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    for _ in 0..<Int.random(in: 0...4, using: &random) {
                        let value = Int.random(in: 0..<5, using: &random) == 0 ? nil : values.randomElement(using: &random)!
                        serializer.setValue(value, forHTTPHeaderField: names.randomElement(using: &random)!)
                    }
                    var request = URLRequest(url: URL(string: "http://a.test/")!)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0:
                        for _ in 0..<Int.random(in: 0...3, using: &random) {
                            request.setValue(values.randomElement(using: &random)!, forHTTPHeaderField: names.randomElement(using: &random)!)
                        }
                    default:
                        // Fields set all at once keep their names as given (lowercase ones as
                        // the HTTPTypes door's requests have them), or none at all: `[:]`.
                        var own: [String: String] = [:]
                        for _ in 0..<Int.random(in: 0...3, using: &random) {
                            own[names.randomElement(using: &random)!] = values.randomElement(using: &random)!
                        }
                        request.allHTTPHeaderFields = own
                    }
                    var expected = request
                    for (field, value) in serializer.httpRequestHeaders where expected.value(forHTTPHeaderField: field) == nil {
                        expected.setValue(value, forHTTPHeaderField: field)
                    }
                    let applied = serializer.applyingDefaults(to: request)
                    if (applied.allHTTPHeaderFields ?? [:]) != (expected.allHTTPHeaderFields ?? [:]) {
                        differences.append("scenario \(scenario): defaults \(serializer.httpRequestHeaders), request "
                            + "\(request.allHTTPHeaderFields ?? [:]): \(applied.allHTTPHeaderFields ?? [:]), "
                            + "not \(expected.allHTTPHeaderFields ?? [:])")
                    }
                }
            }
            #expect(differences.isEmpty, "seed \(random.seed), \(differences.count) differ; first: \(differences.prefix(2))")
        }
    }
}
