import Foundation

/// Where a stored response sits among the responses kept for its URL.
///
/// A URL may have several stored responses at once (RFC 9111 §4.1): one per selection its
/// `Vary` names (English and French), and one per identity (two users of a server's manager,
/// see ``CachedResponse/identityDigest``). Each is kept under its own *storage key*: the cache
/// key, then a tag made of the selecting values and the identity digest. A request finds its
/// variant by making the same tag from its own fields, given the names the URL varies on.
extension CachedResponse {
    /// The lowercased names of the request fields this response's `Vary` selects on, sorted:
    /// the form in which two responses varying on the same fields compare equal.
    var varyingNames: [String] { varyingRequestFields.map(\.name).sorted() }

    /// The key this response is stored under: ``key`` alone when it varies on nothing and
    /// speaks for nobody, else ``key`` and its variant tag.
    var storageKey: String {
        Self.storageKey(key: key, tag: Self.variantTag(
            selecting: varyingRequestFields.sorted { $0.name < $1.name }.map { ($0.name, $0.value) },
            identity: identityDigest))
    }

    /// The storage key of the variant a request selects, for a URL whose responses vary on
    /// `varyingNames`.
    /// - Parameters:
    ///   - key: The cache key.
    ///   - varyingNames: Lowercased field names, sorted (a ``varyingNames``).
    ///   - requestFields: The request's header fields.
    /// - Returns: The storage key the matching response would have.
    static func storageKey(key: String, varyingNames: [String], requestFields: [(name: String, value: String)]) -> String {
        storageKey(key: key, tag: variantTag(
            selecting: varyingNames.map { ($0, selectingValue(of: $0, in: requestFields)) },
            identity: identityDigest(of: requestFields)))
    }

    /// The separator between a cache key and a variant tag: a URL cannot hold it.
    private static let variantSeparator: Character = "\u{0}"

    /// A storage key's cache key.
    /// - Parameter storageKey: A ``storageKey``.
    /// - Returns: The cache key it begins with.
    static func cacheKey(ofStorageKey storageKey: String) -> String {
        storageKey.firstIndex(of: variantSeparator).map { String(storageKey[..<$0]) } ?? storageKey
    }

    private static func storageKey(key: String, tag: String?) -> String {
        tag.map { key + String(variantSeparator) + $0 } ?? key
    }

    /// The digest of the selecting values (``VaryingField/value``, already digests) and the
    /// identity; nil when there are neither, so that a response that varies on nothing keeps
    /// the plain cache key (and its file name) it always had.
    private static func variantTag(selecting: [(name: String, value: String?)], identity: String?) -> String? {
        guard !selecting.isEmpty || identity != nil else { return nil }
        let text = selecting.map { "\($0.name)=\($0.value ?? "-")" }.joined(separator: "\n") + "\n@" + (identity ?? "-")
        return digest(text)
    }
}
