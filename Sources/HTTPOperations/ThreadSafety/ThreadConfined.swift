/// A value that one thread only touches (the network thread, in the library), kept by an
/// object that other threads also reach: a body writer's buffer being filled, a body reader's
/// chunk being copied, a transfer that a reader's callback finds again on the network thread.
///
/// Every access goes through ``withValue(entry:_:)``, which checks in debug builds that it
/// runs on the thread of the first access (``OneThreadCheck``); so the promise that made such
/// fields `@unchecked Sendable` in each class that held them is made, and checked, here once,
/// and those classes are checked `Sendable`. The first access, not the creation, picks the
/// thread: a body writer is made on the thread that starts its operation and used on the
/// network thread, and a test can drive one from its own thread.
///
/// The value comes in `sending`: the thread that made it keeps no way to reach it, so the
/// first accessing thread holds it alone. ``init(reachedOnlyFrom:)`` is for the one value
/// that cannot come in so (a weak reference to an object its maker goes on using), and says
/// how its uses keep the rule.
final class ThreadConfined<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` comes in `sending` (or, through `init(reachedOnlyFrom:)`,
    // from the thread it belongs to), is reached only through `withValue`, on one thread
    // (checked in debug builds), and by `unsafeValueInDeinit` once no thread can reach this
    // object.
    private var value: Value
    private let owner = OneThreadCheck()

    /// Keeps `value`; the first ``withValue(entry:_:)`` picks the thread it belongs to.
    init(_ value: sending Value) {
        self.value = value
    }

    /// Keeps `value`, which the calling thread may still reach: only for a value made on the
    /// thread it belongs to, which the caller asserts (a weak reference made and read on the
    /// network thread).
    init(reachedOnlyFrom value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, on the value's one thread. `entry` names the caller in the
    /// message of a check that fails. Not reentrant: `body` does not call it again.
    @inline(__always)
    func withValue<Result>(entry: StaticString = #function,
                           _ body: (inout Value) throws -> Result) rethrows -> Result {
        owner.check(entry)
        return try body(&value)
    }

    /// The value, without the check: only for the holder's `deinit`, which runs on whichever
    /// thread let go of it last, once no other can reach it.
    var unsafeValueInDeinit: Value { value }
}

/// A weak reference, as a value: what a ``ThreadConfined`` keeps to find an object again
/// without keeping it alive.
struct WeakReference<Object: AnyObject> {
    /// The object, while something else keeps it alive.
    weak var object: Object?
}
