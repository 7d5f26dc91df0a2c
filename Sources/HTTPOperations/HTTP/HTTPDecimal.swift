/// The one reading of a number a server sends (`1*DIGIT`: RFC 9110's `Content-Length`,
/// `Content-Range` positions, delta-seconds): ASCII digits only, no sign, no space, and nil
/// past `Int64.max`. Swift's `Int64(_:)` takes a leading `+` or `-`, so a server's `+5` or
/// `-0` would pass it; and every sum made with a value read here must be checked, since a
/// server may send `Int64.max` itself.
enum HTTPDecimal {
    /// `text` as a non-negative `Int64`, or nil when it is not `1*DIGIT` or does not fit.
    static func parse<Text: StringProtocol>(_ text: Text) -> Int64? {
        parse(bytes: text.utf8)
    }

    /// The same, read from bytes (the response head's storage, without a `String`).
    static func parse<Bytes: Collection<UInt8>>(bytes: Bytes) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }
}
