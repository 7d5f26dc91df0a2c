/// An operation's ``URLConnectionOperation/Settings``, shared copy-on-write.
///
/// Nearly every operation holds what its manager gave it, so operations do not carry a copy
/// each: an operation starts with the process-wide defaults (``defaults``), a manager hands
/// the operations it configures its own settings (a retain, see
/// `HTTPRequestOperationManager.configure`), and the first change an operation makes copies
/// them (Docs/Performance.md has what this saves when 20,000 operations wait in a queue).
///
/// Thread safety, the rule of ``SharedBox``: a storage is only ever written in place while
/// it is uniquely referenced, and every holder (an operation's state, the manager's settings,
/// a copy of those taken under their lock) is itself only accessed exclusively: under its
/// lock, or as a local value. So a new reference is never taken from a holder while that
/// holder writes in place, a storage that two holders share is never written, and reading it
/// from both is safe.
struct SharedSettings {
    private typealias Storage = SharedBox<URLConnectionOperation.Settings>

    private var storage: Storage

    /// The settings of an operation nobody has configured.
    static let defaults = SharedSettings(storage: Storage(URLConnectionOperation.Settings()))

    private init(storage: Storage) { self.storage = storage }

    /// Whether these are still the process-wide defaults, untouched.
    var isDefaults: Bool { isSame(as: Self.defaults) }

    /// Whether no other holder shares these settings.
    mutating func isOwn() -> Bool { isKnownUniquelyReferenced(&storage) }

    /// Whether `other` is this very copy, not a copy that happens to be equal.
    func isSame(as other: SharedSettings) -> Bool { storage === other.storage }

    /// The settings. Writing copies them first when another holder shares them.
    var value: URLConnectionOperation.Settings {
        _read { yield storage.value }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.value) }
            yield &storage.value
        }
    }
}
