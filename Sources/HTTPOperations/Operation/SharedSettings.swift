/// An operation's ``URLConnectionOperation/Settings``, shared copy-on-write.
///
/// Every operation used to carry its own 608-byte copy of the settings, though nearly all of
/// them hold what their manager gave them: 20,000 operations enqueued at once held 12 MB of
/// identical settings. Now an operation starts with the process-wide defaults (``defaults``),
/// a manager hands the operations it configures its own settings (a retain, see
/// `HTTPRequestOperationManager.configure`), and the first change an operation makes copies
/// them.
///
/// Thread safety: a storage is only ever written in place while it is uniquely referenced,
/// and every holder (an operation's state, the manager's settings, a copy of those taken
/// under their lock) is itself only accessed exclusively: under its lock, or as a local
/// value. So a new reference is never taken from a holder while that holder writes in
/// place, a storage that two holders share is never written, and reading it from both is
/// safe.
struct SharedSettings {
    /// The storage; `@unchecked Sendable` because of the rule above: shared means read-only.
    private final class Storage: @unchecked Sendable {
        // Unchecked exclusivity: by the rule above, a write in place is made by the one
        // holder, which no one else accesses meanwhile; the dynamic check would cost each
        // access a runtime call.
        @exclusivity(unchecked) var value: URLConnectionOperation.Settings

        init(_ value: URLConnectionOperation.Settings) { self.value = value }
    }

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
