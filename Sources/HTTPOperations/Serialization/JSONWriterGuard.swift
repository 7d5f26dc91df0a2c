import Foundation

/// What `JSONSerialization.data(withJSONObject:options:)` gets wrong instead of throwing, caught
/// before it is called.
///
/// Corelibs Foundation's writer throws for a value JSON cannot hold (a `Date`, a `Double` NaN,
/// a number as a key) wherever it sits, except in three cases:
/// - a top-level value that is no array or dictionary, without `.fragmentsAllowed`: it stops
///   the program;
/// - nesting: it recurses without limit, so a deep enough tree overflows the stack (its reader
///   refuses more than 512 arrays and objects nested in one another);
/// - a `Decimal` or `NSDecimalNumber` NaN: it writes `NaN`, which is not JSON.
///
/// `JSONSerialization.isValidJSONObject` catches all three, but it walks the whole tree with a
/// dynamic cast per value: on a small object it cost about half of what encoding it did
/// (Docs/Performance.md, "A small JSON POST, taken apart"). This walk looks for the three
/// alone, and tells the common leaves and the two usual containers by their type's identity,
/// without a cast (other values take one).
enum JSONWriterGuard {
    /// The most arrays and objects nested in one another that are written: what Foundation's
    /// reader accepts.
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
        // Only arrays and objects count towards the depth, as Foundation's reader counts them.
        let type = ObjectIdentifier(Swift.type(of: value))
        if leaves.contains(type) { return true }
        if type == object {
            return writable(children: (value as! [String: Any]).values, depth: depth)
        }
        if type == array {
            return writable(children: value as! [Any], depth: depth)
        }
        switch value {
        // Containers before any cast to a class: casting a Swift array or dictionary to a class
        // bridges it to its NS form first, its whole subtree with it, with no depth limit (a
        // chain of 20,000 `[Any?]` overflowed the stack there).
        case let array as [Any]: return writable(children: array, depth: depth)
        case let object as [AnyHashable: Any]: return writable(children: object.values, depth: depth)
        case let decimal as Decimal: return !decimal.isNaN
        case let number as NSDecimalNumber: return !number.decimalValue.isNaN
        // Anything else the writer writes or throws for.
        default: return true
        }
    }

    /// Whether a container at `depth` may be written: within the limit, every child too.
    private static func writable<Children: Sequence<Any>>(children: Children, depth: Int) -> Bool {
        depth <= maximumDepth && children.allSatisfy { writable($0, depth: depth + 1) }
    }
}
