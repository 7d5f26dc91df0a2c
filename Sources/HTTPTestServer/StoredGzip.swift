/// A gzip stream (RFC 1952) of stored, uncompressed deflate blocks (RFC 1951 §3.2.4): valid
/// gzip any client decodes, made without zlib. The adversarial server gzips whole answers
/// with it, as nginx's gzip filter does; what matters there is the encoding, not the ratio.
enum StoredGzip {
    /// `bytes`, gzipped.
    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        // Magic, deflate, no flags, no time, no extra flags, unknown OS.
        var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255]
        var offset = 0
        repeat {
            let count = min(0xFFFF, bytes.count - offset)
            let final: UInt8 = offset + count == bytes.count ? 1 : 0
            let length = UInt16(count)
            out.append(final)  // BFINAL, BTYPE 00 (stored), padded to the byte
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
            out += bytes[offset..<(offset + count)]
            offset += count
        } while offset < bytes.count
        let crc = crc32(bytes)
        let size = UInt32(truncatingIfNeeded: bytes.count)
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: size >> UInt32(shift))) }
        return out
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// CRC-32 (ISO 3309, as gzip uses it).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }
}
