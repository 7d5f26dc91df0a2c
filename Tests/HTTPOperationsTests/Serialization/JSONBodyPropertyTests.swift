import Foundation
import HTTPOperations
import Testing

extension AllTests {
    /// The JSON request serializer's promise, as a property over random trees: whatever the
    /// parameters, it either refuses them with `RequestSerializationError` `.invalidJSONObject`
    /// or sends bytes that Foundation reads back as JSON, and it refuses exactly the trees that
    /// hold something JSON cannot (so every tree that can be sent, is).
    @Suite struct JSONBodyProperty {
        /// Trees per run (fewer under the sanitizers, which run the whole suite again).
        #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
        static let scenarios = 600
        #else
        static let scenarios = 3_000
        #endif

        @Test func everyTreeIsRefusedOrSentAsJSONAndOnlyTheUnwritableAreRefused() throws {
            var random = SeededGenerator(for: "JSON body property")
            var refusedCount = 0
            for scenario in 0..<Self.scenarios {
                var tree = RandomJSONTree(random: random)
                let fragments = Bool.random(using: &tree.random)
                let (value, writable) = tree.make(depth: 1, top: !fragments)
                random = tree.random
                let serializer = HTTPRequestSerializer(bodyEncoding: .json(fragments ? .fragmentsAllowed : []))
                // Described only for a failure's message.
                let what = { "scenario \(scenario) (seed \(random.seed)), fragments \(fragments): \(String(describing: value).prefix(300))" }
                do {
                    let request = try serializer.request(method: "POST", urlString: "http://a.test/", parameters: value)
                    let body = try #require(request.httpBody, "\(what()): no body")
                    #expect(writable, "\(what()): sent although it holds what JSON cannot: \(String(decoding: body.prefix(200), as: UTF8.self))")
                    // The oracle of "this is JSON": Foundation's reader takes it back.
                    #expect(throws: Never.self, "\(what()): not JSON: \(String(decoding: body.prefix(200), as: UTF8.self))") {
                        try JSONSerialization.jsonObject(with: body, options: .fragmentsAllowed)
                    }
                } catch let error as RequestSerializationError {
                    refusedCount += 1
                    #expect(!writable, "\(what()): refused although JSON can hold it")
                    #expect(error.code == .invalidJSONObject, "\(what()): \(error)")
                }
            }
            // Both outcomes must have been tried, or the property was not.
            #expect(refusedCount > Self.scenarios / 10 && refusedCount < Self.scenarios * 9 / 10, "refused \(refusedCount)")
        }
    }
}

/// Random parameter trees for the JSON serializer, each with whether JSON can hold it: the
/// leaves and containers users pass (Swift and Foundation types, optionals), what JSON cannot
/// hold (a date, NaN, an infinity, a decimal NaN, a number as a key, a value of no JSON type),
/// and now and then a chain nested past Foundation's reader's 512 levels.
struct RandomJSONTree {
    var random: SeededGenerator
    private struct Opaque {}

    /// A value at `depth` (arrays and objects counted from 1) and whether JSON can hold it;
    /// `top` asks for an array or an object (a serializer without `.fragmentsAllowed`).
    mutating func make(depth: Int, top: Bool = false) -> (Any, Bool) {
        let roll = Int.random(in: 0..<100, using: &random)
        if top || (depth < 6 && roll < 35) { return container(depth: depth) }
        if roll < 37 { return deepChain(depth: depth) }
        return leaf()
    }

    private mutating func container(depth: Int) -> (Any, Bool) {
        let count = Int.random(in: 0...4, using: &random)
        var writable = depth <= 512
        switch Int.random(in: 0..<6, using: &random) {
        case 0, 1:
            var array: [Any] = []
            for _ in 0..<count { let (value, ok) = make(depth: depth + 1); array.append(value); writable = writable && ok }
            return (array, writable)
        case 2:
            var array: [Any?] = []
            for _ in 0..<count {
                if Bool.random(using: &random) { array.append(nil); continue }
                let (value, ok) = make(depth: depth + 1); array.append(value); writable = writable && ok
            }
            return (array, writable)
        case 3:
            let array = NSMutableArray()
            for _ in 0..<count { let (value, ok) = make(depth: depth + 1); array.add(value); writable = writable && ok }
            return (array, writable)
        case 4 where Int.random(in: 0..<8, using: &random) == 0:
            // A number as a key: JSON's keys are strings.
            let (value, _) = make(depth: depth + 1)
            return ([1: value] as [Int: Any], false)
        default:
            var object: [String: Any] = [:]
            for key in 0..<count { let (value, ok) = make(depth: depth + 1); object["k\(key)"] = value; writable = writable && ok }
            return (object, writable)
        }
    }

    /// Arrays or objects nested 505–520 deep from `depth`, a value innermost.
    private mutating func deepChain(depth: Int) -> (Any, Bool) {
        let levels = Int.random(in: 505...520, using: &random)
        let objects = Bool.random(using: &random)
        var value: Any = 1
        for _ in 0..<levels { value = objects ? ["k": value] as [String: Any] : [value] as [Any] }
        return (value, depth + levels - 1 <= 512)
    }

    private mutating func leaf() -> (Any, Bool) {
        switch Int.random(in: 0..<16, using: &random) {
        case 0: return ("text \u{1F600} \"quoted\" \\ /", true)
        case 1: return (Int.random(in: Int.min...Int.max, using: &random), true)
        case 2: return (Bool.random(using: &random), true)
        case 3: return (Double.random(in: -1e300...1e300, using: &random), true)
        case 4: return (NSNull(), true)
        case 5: return (Decimal(string: "12.5")!, true)
        case 6: return (NSNumber(value: Float(2.5)), true)
        case 7: return (UInt8(7), true)
        case 8: return ("ns" as NSString, true)
        case 9: return (Date(), false)
        case 10: return (Double.nan, false)
        case 11: return (-Double.infinity, false)
        case 12: return (Decimal.nan, false)
        case 13: return (NSDecimalNumber.notANumber, false)
        case 14: return (Opaque(), false)
        default: return (Optional<Decimal>.some(.nan) as Any, false)
        }
    }
}
