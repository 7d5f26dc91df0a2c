/// A value handed from one thread to another whole, that its type does not mark `Sendable`.
///
/// For Foundation and CoreFoundation references that are safe to pass this way but are not
/// annotated: an `OutputStream` that, once the operation starts, only the network thread
/// writes; a `CFRunLoop`, whose wake-up functions are documented as callable from any thread;
/// a filled body buffer, which the side that hands it over lets go of. Every use says why it
/// is safe.
struct Handover<Value>: @unchecked Sendable {
    /// The value.
    var value: Value

    init(_ value: Value) {
        self.value = value
    }
}
