/// A value kept out of line, that several holders may share while none writes it.
///
/// The rule that makes it safe to send: a box is written in place only by its one holder,
/// while no other thread can reach that holder (it is a local value, or it is reached under
/// its owner's lock), and a box two holders share is only read. Each use says how it keeps
/// the rule: ``SharedSettings`` copies before writing a box it does not hold alone; an
/// operation's transfer record is its own box, touched under the operation's lock, and every
/// operation that has not started reads one shared box that is never written. Sendable only
/// when its value is: the rule makes sharing safe, not a value that is unsafe to share.
///
/// Its exclusivity is unchecked because of the same rule: the dynamic check would cost every
/// access a runtime call, and these are read on every event of every transfer.
final class SharedBox<Value> {
    /// The value; see the rule above before writing it.
    @exclusivity(unchecked) var value: Value

    init(_ value: Value) { self.value = value }
}

extension SharedBox: @unchecked Sendable where Value: Sendable {}
