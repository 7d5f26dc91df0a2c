import Foundation

/// What `JSONSerialization.data(withJSONObject:options:)` gets wrong instead of throwing, caught
/// before it is called.
///
/// Corelibs Foundation's writer throws for a value JSON cannot hold (a `Date`, a `Double` NaN,
/// a number as a key) wherever it sits, except in three cases:
/// - a top-level value that is no array or dictionary, without `.fragmentsAllowed`: it stops
///   the program;
/// - nesting: it recurses without limit, so a deep enough tree overflows the stack (its reader
///   refuses more than 512 levels);
/// - a `Decimal` or `NSDecimalNumber` NaN: it writes `NaN`, which is not JSON.
///
/// `JSONSerialization.isValidJSONObject` catches all three, but it walks the whole tree with a
/// dynamic cast per value: on a small object it cost about half of what encoding it did
/// (Docs/Performance.md, "A small JSON POST, taken apart"). This walk looks for the three
/// alone, and tells the common leaves and containers by their type's identity, without a
/// cast.
enum JSONWriterGuard {
    /// The deepest nesting written: what Foundation's reader (and `isValidJSONObject`) accepts.
    static let maximumDepth = 512

    /// Whether `value` can go to the writer: it will either write JSON or throw.
    static func admits(_ value: Any, options: JSONSerialization.WritingOptions) -> Bool {
        guard options.contains(.fragmentsAllowed) || isContainer(value) else { return false }
        return writable(value, depth: 1)
    }

    private static let leaves: [ObjectIdentifier] = [
        ObjectIdentifier(String.self), ObjectIdentifier(Int.self), ObjectIdentifier(Bool.self), ObjectIdentifier(Double.self),
    ]
    private static let object = ObjectIdentifier([String: Any].self)
    private static let array = ObjectIdentifier([Any].self)

    /// What the writer takes at the top without `.fragmentsAllowed`: its own test, with the
    /// two usual types first (a cast to `[AnyHashable: Any]` copies a `[String: Any]`).
    private static func isContainer(_ value: Any) -> Bool {
        let type = ObjectIdentifier(Swift.type(of: value))
        return type == object || type == array || value is [Any] || value is [AnyHashable: Any]
    }

    private static func writable(_ value: Any, depth: Int) -> Bool {
        guard depth <= maximumDepth else { return false }
        let type = ObjectIdentifier(Swift.type(of: value))
        if leaves.contains(type) { return true }
        if type == object {
            return (value as! [String: Any]).values.allSatisfy { writable($0, depth: depth + 1) }
        }
        if type == array {
            return (value as! [Any]).allSatisfy { writable($0, depth: depth + 1) }
        }
        switch value {
        case let number as NSDecimalNumber: return number != NSDecimalNumber.notANumber
        case let decimal as Decimal: return !decimal.isNaN
        case let object as [AnyHashable: Any]: return object.values.allSatisfy { writable($0, depth: depth + 1) }
        case let array as [Any]: return array.allSatisfy { writable($0, depth: depth + 1) }
        // Anything else the writer writes or throws for.
        default: return true
        }
    }
}
