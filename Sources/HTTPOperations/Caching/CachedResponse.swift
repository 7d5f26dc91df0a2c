import Crypto
import Foundation

/// One stored response with the request context needed to reuse it (RFC 9111 §3, §4).
struct CachedResponse: Codable, Sendable, Equatable {
    /// One header field line, as received.
    struct Field: Codable, Sendable, Equatable {
        /// The field name, in the case it was received.
        var name: String
        /// The field value, as received.
        var value: String
    }

    /// The value a request field named in the response's `Vary` had when the response
    /// was stored (§4.1), so later requests can be matched against it.
    struct VaryingField: Codable, Sendable, Equatable {
        /// The lowercased field name from `Vary`.
        var name: String
        /// The hex SHA-256 of the normalized request value, or nil when the request had no
        /// such field: `Vary: Authorization` or `Vary: Cookie` must not write a credential
        /// into the cache's files.
        var value: String?
    }

    /// The cache key, `"GET " + URL without fragment` (§2).
    var key: String
    /// The target URI, for diagnostics and invalidation.
    var url: String
    /// The final status code.
    var status: Int
    /// The response header fields in received order, repeated fields kept apart.
    var headerFields: [Field]
    /// The response content.
    var body: Data
    /// When the request that produced this response was sent (`request_time`, §4.2.3).
    var requestTime: Date
    /// When this response was received (`response_time`, §4.2.3).
    var responseTime: Date
    /// One entry per distinct name in the response's `Vary`; empty when it has none.
    var varyingRequestFields: [VaryingField]
    /// Who the storing request spoke for: a keyed digest (HMAC-SHA256, with a key made for
    /// this process) of its `Authorization`, its `Cookie` (a caller's field, or the
    /// operation's cookie store standing in as one) and the caller's cache partition; nil
    /// when it carried none of them. The cache is private to one manager, but a server's
    /// manager often acts for many users: a response stored for one identity is never the
    /// answer to a request with another or none, as if every response varied on all three.
    /// Such a response is kept in memory only (``HTTPCacheStorage``): the key never leaves
    /// the process, so no digest on disk could be tried against guessed credentials.
    var identityDigest: String?

    /// Builds a stored response, capturing the request fields its `Vary` names.
    /// - Parameters:
    ///   - key: The cache key.
    ///   - url: The target URI.
    ///   - status: The final status code.
    ///   - responseFields: The response's header fields, in received order.
    ///   - body: The response content.
    ///   - requestFields: The header fields of the request that was sent.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response arrived.
    init(
        key: String, url: String, status: Int,
        responseFields: [(name: String, value: String)], body: Data,
        requestFields: [(name: String, value: String)],
        requestTime: Date, responseTime: Date
    ) {
        self.key = key
        self.url = url
        self.status = status
        self.headerFields = responseFields.map { Field(name: $0.name, value: $0.value) }
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        var seen = Set<String>()
        self.varyingRequestFields = HeaderFieldList.listElements(named: "Vary", in: responseFields)
            .map { $0.lowercased() }
            .filter { seen.insert($0).inserted }
            .map { VaryingField(name: $0, value: Self.selectingValue(of: $0, in: requestFields)) }
        self.identityDigest = Self.identityDigest(of: requestFields)
    }

    /// The request field a caller's cache partition stands in as (see
    /// ``URLConnectionOperation/cachePartition``): a name no request on the wire can carry.
    static let partitionField = ":cache-partition"

    /// The fields that say whom a request speaks for.
    static let identityFields = ["authorization", "cookie", partitionField]

    /// The key of ``identityDigest``: random, made once per process, never written.
    private static let identityKey = SymmetricKey(size: .bits256)

    /// The keyed digest of a request's identity fields (see ``identityDigest``), nil when it
    /// has none.
    /// - Parameter requestFields: The request's header fields.
    /// - Returns: The digest that ``identityDigest`` is compared with.
    static func identityDigest(of requestFields: [(name: String, value: String)]) -> String? {
        let values = identityFields.map { HeaderFieldList.combinedValue(named: $0, in: requestFields) }
        guard values.contains(where: { $0 != nil }) else { return nil }
        // Each value length-prefixed, so that no two sets of values read alike.
        let text = values.map { $0.map { "\($0.utf8.count):\($0)" } ?? "-" }.joined(separator: ",")
        return HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: identityKey)
            .lowercaseHex
    }

    /// What a stored response keeps of a request field its `Vary` names: the digest of its
    /// normalized value (see ``VaryingField/value``).
    static func selectingValue(of name: String, in fields: [(name: String, value: String)]) -> String? {
        normalizedValue(of: name, in: fields).map(digest)
    }

    /// The hex SHA-256 of `text`.
    static func digest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).lowercaseHex
    }

    /// The header fields as the tuple list the policy functions take.
    var fieldList: [(name: String, value: String)] {
        headerFields.map { (name: $0.name, value: $0.value) }
    }

    /// The value of a field, all its lines joined with ", " (RFC 9110 §5.3).
    /// - Parameter name: The field name, in any case.
    /// - Returns: The combined value, or nil when the field is absent.
    func value(of name: String) -> String? {
        HeaderFieldList.combinedValue(named: name, in: fieldList)
    }

    /// The stored entity tag, used for `If-None-Match` (§4.3.1); ETag is a singleton field,
    /// so only its first line counts.
    var etag: String? {
        HeaderFieldList.firstValue(named: "ETag", in: fieldList).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The stored `Last-Modified` value, used for `If-Modified-Since` (§4.3.1).
    var lastModified: String? {
        HeaderFieldList.firstValue(named: "Last-Modified", in: fieldList).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The approximate size of the entry: body plus header lines (`name: value\r\n`).
    var byteCount: Int {
        headerFields.reduce(body.count) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    /// Whether a new request selects this response under its `Vary` (§4.1): every named
    /// field must have the same normalized value, and a field absent from both requests
    /// matches; and it speaks for the same identity (see ``identityDigest``).
    /// - Parameter requestFields: The new request's header fields.
    /// - Returns: True when the stored response may be used for that request.
    func matchesVary(requestFields: [(name: String, value: String)]) -> Bool {
        Self.identityDigest(of: requestFields) == identityDigest
            && varyingRequestFields.allSatisfy { Self.selectingValue(of: $0.name, in: requestFields) == $0.value }
    }

    /// A request field's value normalized for `Vary` comparison (§4.1): repeated lines
    /// combined, list elements trimmed and joined with ", " (commas inside quoted strings
    /// kept), since none of these changes the field's meaning.
    /// - Parameters:
    ///   - name: The field name, in any case.
    ///   - fields: The request's header fields.
    /// - Returns: The normalized value, or nil when the request has no such field.
    static func normalizedValue(of name: String, in fields: [(name: String, value: String)]) -> String? {
        let lines = HeaderFieldList.values(named: name, in: fields)
        guard !lines.isEmpty else { return nil }
        return HeaderFieldList.splitList(lines.joined(separator: ",")).joined(separator: ", ")
    }
}
