import Foundation

/// Builds query strings exactly as AFNetworking 2.x did (`AFQueryStringFromParameters`).
///
/// - Dictionary keys are sorted by their description; nested dictionaries become `key[sub]`.
/// - Arrays become `key[]`, one pair per element, in order.
/// - Sets become the repeated key, one pair per element, sorted by description.
/// - A null value (`NSNull`, or nil in an optional) gives the key alone.
/// - Keys and values are percent-escaped per RFC 3986: only unreserved characters
///   (`A–Z a–z 0–9 - . _ ~`) and `/` and `?` stay literal. Already-escaped input is escaped
///   again (`%` becomes `%25`), never decoded. Escaping works on whole characters, so
///   multi-byte characters and emoji are never split.
/// - Booleans are written as `1` and `0`, as `NSNumber` wrote them.
public enum QueryString {
    /// The characters that stay literal.
    static let allowed: CharacterSet = {
        var set = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        set.insert(charactersIn: "/?")
        return set
    }()

    /// The query string for `parameters`.
    public static func make(from parameters: Any) -> String {
        pairs(key: nil, value: parameters).map { $0.encoded }.joined(separator: "&")
    }

    /// `string` percent-escaped for a query.
    public static func escape(_ string: String) -> String {
        string.addingPercentEncoding(withAllowedCharacters: allowed) ?? string
    }

    /// The query string for `parameters` with every byte that `encoding` writes for a key or
    /// value escaped (a form body in that charset; ``make(from:)`` for UTF-8); nil when some
    /// text cannot be written in `encoding`.
    static func make(from parameters: Any, escapingBytesOf encoding: String.Encoding) -> String? {
        guard encoding != .utf8 else { return make(from: parameters) }
        var encoded: [String] = []
        for pair in pairs(key: nil, value: parameters) {
            guard let field = escape(pair.field, bytesOf: encoding) else { return nil }
            guard let value = pair.value, !(value is NSNull) else {
                encoded.append(field)
                continue
            }
            guard let escaped = escape(describe(value), bytesOf: encoding) else { return nil }
            encoded.append(field + "=" + escaped)
        }
        return encoded.joined(separator: "&")
    }

    /// `string` written in `encoding`, each byte outside the literal set as `%XX`.
    private static func escape(_ string: String, bytesOf encoding: String.Encoding) -> String? {
        guard let bytes = string.data(using: encoding, allowLossyConversion: false) else { return nil }
        let hex = Array("0123456789ABCDEF".utf8)
        var escaped: [UInt8] = []
        escaped.reserveCapacity(bytes.count * 3)
        for byte in bytes {
            if byte < 0x80, allowed.contains(Unicode.Scalar(byte)) {
                escaped.append(byte)
            } else {
                escaped += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }

    struct Pair {
        let field: String
        let value: Any?

        var encoded: String {
            guard let value, !(value is NSNull) else { return QueryString.escape(field) }
            return QueryString.escape(field) + "=" + QueryString.escape(QueryString.describe(value))
        }
    }

    static func pairs(key: String?, value: Any) -> [Pair] {
        if let dictionary = asDictionary(value) {
            return dictionary.sorted { describe($0.key) < describe($1.key) }.flatMap { nestedKey, nestedValue in
                let name = key.map { "\($0)[\(describe(nestedKey))]" } ?? describe(nestedKey)
                return pairs(key: name, value: nestedValue)
            }
        }
        if let array = value as? [Any] {
            return array.flatMap { pairs(key: "\(key ?? "")[]", value: $0) }
        }
        if let set = asSet(value) {
            return set.sorted { describe($0) < describe($1) }.flatMap { pairs(key: key, value: $0) }
        }
        return [Pair(field: key ?? "", value: unwrapped(value))]
    }

    private static func asDictionary(_ value: Any) -> [(key: AnyHashable, value: Any)]? {
        if let dictionary = value as? [AnyHashable: Any] { return dictionary.map { ($0.key, $0.value) } }
        if let dictionary = value as? NSDictionary {
            return dictionary.compactMap { entry in (entry.key as? AnyHashable).map { ($0, entry.value) } }
        }
        return nil
    }

    private static func asSet(_ value: Any) -> [Any]? {
        if let set = value as? Set<AnyHashable> { return Array(set) }
        if let set = value as? NSSet { return set.allObjects }
        return nil
    }

    /// nil for a nil optional hidden in `Any`, else the value.
    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first?.value
    }

    /// The text a value stands for in a query.
    static func describe(_ value: Any) -> String {
        // Dynamic casts see through AnyHashable boxes, so keys are described like values.
        switch value {
        case let bool as Bool: return bool ? "1" : "0"
        case let string as String: return string
        case let number as NSNumber: return number.description
        default: return "\(value)"
        }
    }
}
