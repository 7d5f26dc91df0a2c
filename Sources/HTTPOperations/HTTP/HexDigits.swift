/// Bytes (a digest, an authentication code) as lowercase hexadecimal: how the library writes
/// every SHA-256 it shows, compares or stores.
extension Sequence<UInt8> {
    /// Two lowercase hex digits per byte, in order.
    var lowercaseHex: String {
        let digits: [Character] = Array("0123456789abcdef")
        var text = ""
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }
}
