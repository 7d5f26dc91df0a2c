/// A value kept out of line, that several holders may share while none writes it.
///
/// The rule that makes it safe to send: a box is written in place only by a holder that no
/// one else can reach meanwhile (it holds the box alone, or holds it under a lock every other
/// holder takes too), and a box two holders can reach is only read. Each use says how it
/// keeps the rule: ``SharedSettings`` copies before writing a box it does not hold alone; an
/// operation's transfer record is its own box, touched under its lock, and every operation
/// that has not started reads one shared box that is never written.
///
/// Its exclusivity is unchecked because of the same rule: the dynamic check would cost every
/// access a runtime call, and these are read on every event of every transfer.
final class SharedBox<Value>: @unchecked Sendable {
    /// The value; see the rule above before writing it.
    @exclusivity(unchecked) var value: Value

    init(_ value: Value) { self.value = value }
}
