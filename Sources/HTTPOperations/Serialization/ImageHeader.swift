import Foundation

/// An image as a server sees it: its format, its pixel size, and its bytes. (There is no
/// UIImage on Linux, and decoding pixels is rarely what a server wants.)
public struct Image: Sendable, Equatable {
    /// The file formats whose headers this library reads.
    public enum Format: String, Sendable, CaseIterable {
        case png, jpeg, gif, bmp, tiff, ico, webp
    }

    /// The format.
    public let format: Format
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// The encoded bytes.
    public let data: Data

    /// Reads the format and size from the header of `data`; nil when it is no image this
    /// library reads, or is truncated before its size.
    public init?(data: Data) {
        guard let (format, width, height) = data.withUnsafeBytes({ ImageHeader.read(ByteReader($0)) }) else {
            return nil
        }
        (self.format, self.width, self.height, self.data) = (format, width, height, data)
    }
}

/// Reads image headers; pure and bounds-checked, so any bytes give an answer or nil.
enum ImageHeader {
    /// Reads the bytes in place: a JPEG's size can come after megabytes of metadata, so
    /// nothing is copied first.
    static func read(_ reader: ByteReader) -> (Image.Format, Int, Int)? {
        let bytes = reader.bytes
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            guard let width = reader.u32be(16), let height = reader.u32be(20) else { return nil }
            return valid(.png, Int(width), Int(height))
        }
        if bytes.starts(with: Array("GIF87a".utf8)) || bytes.starts(with: Array("GIF89a".utf8)) {
            guard let width = reader.u16le(6), let height = reader.u16le(8) else { return nil }
            return valid(.gif, Int(width), Int(height))
        }
        if bytes.starts(with: [0xFF, 0xD8]) { return jpeg(reader) }
        if bytes.starts(with: Array("BM".utf8)) { return bmp(reader) }
        if bytes.starts(with: [0x49, 0x49, 0x2A, 0x00]) { return tiff(reader, littleEndian: true) }
        if bytes.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return tiff(reader, littleEndian: false) }
        if bytes.starts(with: [0x00, 0x00, 0x01, 0x00]) {
            guard let count = reader.u16le(4), count > 0, let width = reader.u8(6), let height = reader.u8(7) else { return nil }
            return valid(.ico, width == 0 ? 256 : Int(width), height == 0 ? 256 : Int(height))
        }
        if bytes.starts(with: Array("RIFF".utf8)), reader.matches(Array("WEBP".utf8), at: 8) { return webp(reader) }
        return nil
    }

    private static func valid(_ format: Image.Format, _ width: Int, _ height: Int) -> (Image.Format, Int, Int)? {
        width > 0 && height > 0 ? (format, width, height) : nil
    }

    /// Walks the JPEG segments to the first start-of-frame marker.
    private static func jpeg(_ reader: ByteReader) -> (Image.Format, Int, Int)? {
        var index = 2
        while let marker = reader.u8(index), marker == 0xFF {
            guard let kind = reader.u8(index + 1) else { return nil }
            if kind == 0xFF { index += 1; continue }                      // fill byte
            if kind == 0xD8 || kind == 0x01 || (0xD0...0xD7).contains(kind) { index += 2; continue }
            guard let length = reader.u16be(index + 2), length >= 2 else { return nil }
            let startOfFrame: Set<UInt8> = [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF]
            if startOfFrame.contains(kind) {
                guard let height = reader.u16be(index + 5), let width = reader.u16be(index + 7) else { return nil }
                return valid(.jpeg, Int(width), Int(height))
            }
            index += 2 + Int(length)
        }
        return nil
    }

    private static func bmp(_ reader: ByteReader) -> (Image.Format, Int, Int)? {
        guard let headerSize = reader.u32le(14) else { return nil }
        if headerSize == 12 {
            guard let width = reader.u16le(18), let height = reader.u16le(20) else { return nil }
            return valid(.bmp, Int(width), Int(height))
        }
        guard let width = reader.u32le(18), let height = reader.u32le(22) else { return nil }
        // A negative height means the rows run top-down.
        return valid(.bmp, Int(Int32(bitPattern: width)), abs(Int(Int32(bitPattern: height))))
    }

    private static func tiff(_ reader: ByteReader, littleEndian: Bool) -> (Image.Format, Int, Int)? {
        let u16 = littleEndian ? reader.u16le : reader.u16be
        let u32 = littleEndian ? reader.u32le : reader.u32be
        guard let ifd = u32(4), let count = u16(Int(ifd)) else { return nil }
        var width: Int?, height: Int?
        for entry in 0..<Int(count) {
            let at = Int(ifd) + 2 + entry * 12
            guard let tag = u16(at), let type = u16(at + 2) else { return nil }
            let value: Int? = type == 3 ? u16(at + 8).map(Int.init) : u32(at + 8).map(Int.init)
            if tag == 256 { width = value }
            if tag == 257 { height = value }
        }
        guard let width, let height else { return nil }
        return valid(.tiff, width, height)
    }

    private static func webp(_ reader: ByteReader) -> (Image.Format, Int, Int)? {
        if reader.matches(Array("VP8 ".utf8), at: 12) {
            guard let width = reader.u16le(26), let height = reader.u16le(28) else { return nil }
            return valid(.webp, Int(width & 0x3FFF), Int(height & 0x3FFF))
        }
        if reader.matches(Array("VP8L".utf8), at: 12) {
            guard reader.u8(20) == 0x2F, let bits = reader.u32le(21) else { return nil }
            return valid(.webp, Int(bits & 0x3FFF) + 1, Int((bits >> 14) & 0x3FFF) + 1)
        }
        if reader.matches(Array("VP8X".utf8), at: 12) {
            guard let width = reader.u24le(24), let height = reader.u24le(27) else { return nil }
            return valid(.webp, Int(width) + 1, Int(height) + 1)
        }
        return nil
    }
}

/// Bounds-checked little- and big-endian reads from bytes in place; valid only while the
/// buffer it reads is.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    func u8(_ at: Int) -> UInt8? { at >= 0 && at < bytes.count ? bytes[at] : nil }

    func matches(_ expected: [UInt8], at: Int) -> Bool {
        at >= 0 && at + expected.count <= bytes.count && bytes[at..<at + expected.count].elementsEqual(expected)
    }

    private func unsigned(_ at: Int, _ count: Int, bigEndian: Bool) -> UInt32? {
        guard at >= 0, at + count <= bytes.count else { return nil }
        let slice = bytes[at..<at + count]
        let ordered = bigEndian ? Array(slice) : slice.reversed()
        return ordered.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    func u16le(_ at: Int) -> UInt16? { unsigned(at, 2, bigEndian: false).map { UInt16($0) } }
    func u16be(_ at: Int) -> UInt16? { unsigned(at, 2, bigEndian: true).map { UInt16($0) } }
    func u24le(_ at: Int) -> UInt32? { unsigned(at, 3, bigEndian: false) }
    func u32le(_ at: Int) -> UInt32? { unsigned(at, 4, bigEndian: false) }
    func u32be(_ at: Int) -> UInt32? { unsigned(at, 4, bigEndian: true) }
}
