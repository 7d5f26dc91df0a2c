import Foundation

/// The on-disk format of one cache entry, and the naming of entry files.
///
/// Layout: a 10-byte header — the magic bytes `HCCE`, a big-endian UInt16 format
/// version, a big-endian UInt32 metadata length — then the metadata as JSON (everything
/// but the body, plus the body length), then the body bytes. The body length lets a
/// truncated file be detected; anything that does not decode is treated as a miss.
enum CacheFileFormat {
    /// The magic bytes that open every entry file.
    static let magic: [UInt8] = Array("HCCE".utf8)
    /// The current format version; files of another version are deleted when the folder is
    /// scanned. Version 3 keeps each variant of a URL in a file of its own.
    static let version: UInt16 = 3
    /// Size of the fixed header: magic, version, metadata length.
    static let headerLength = 10
    /// The extension of entry files, which marks them as ours.
    static let fileExtension = "httpcache"
    /// The prefix of files being written; leftovers of a crash are deleted at startup.
    static let temporaryPrefix = ".partial-"

    /// Everything stored about an entry except its body.
    private struct Metadata: Codable {
        /// See `CachedResponse.key`.
        var key: String
        /// See `CachedResponse.url`.
        var url: String
        /// See `CachedResponse.status`.
        var status: Int
        /// See `CachedResponse.headerFields`.
        var headerFields: [CachedResponse.Field]
        /// See `CachedResponse.requestTime`.
        var requestTime: Date
        /// See `CachedResponse.responseTime`.
        var responseTime: Date
        /// See `CachedResponse.varyingRequestFields`.
        var varyingRequestFields: [CachedResponse.VaryingField]
        /// See `CachedResponse.identityDigest` (always nil on disk: such entries stay in
        /// memory; kept so that a file claiming one is never read as speaking for nobody).
        var identityDigest: String?
        /// The number of body bytes that follow the metadata.
        var bodyByteCount: Int
    }

    /// Whether the first bytes of a file are an entry's of another format version.
    static func isOtherVersion(header: Data) -> Bool {
        let bytes = [UInt8](header.prefix(6))
        guard bytes.count == 6, Array(bytes[0..<4]) == magic else { return false }
        return (UInt16(bytes[4]) << 8 | UInt16(bytes[5])) != version
    }

    /// Serializes an entry. Dates keep Foundation's default encoding (seconds since the
    /// reference date) because it round-trips a `Date` exactly.
    /// - Parameter response: The entry to write.
    /// - Returns: The complete file content.
    static func encode(_ response: CachedResponse) throws -> Data {
        let metadata = Metadata(
            key: response.key, url: response.url, status: response.status,
            // A `Set-Cookie` is a credential the server hands out: never written to the files.
            headerFields: response.headerFields.filter { $0.name.lowercased() != "set-cookie" },
            requestTime: response.requestTime, responseTime: response.responseTime,
            varyingRequestFields: response.varyingRequestFields,
            identityDigest: response.identityDigest,
            bodyByteCount: response.body.count)
        let json = try JSONEncoder().encode(metadata)
        var file = Data(capacity: headerLength + json.count + response.body.count)
        file.append(contentsOf: magic)
        file.append(contentsOf: [UInt8(version >> 8), UInt8(version & 0xFF)])
        let length = UInt32(json.count)
        file.append(contentsOf: [24, 16, 8, 0].map { UInt8((length >> $0) & 0xFF) })
        file.append(json)
        file.append(response.body)
        return file
    }

    /// What a file's metadata says of the entry's place among its URL's variants.
    struct VariantMetadata: Equatable {
        /// The cache key.
        var key: String
        /// See ``CachedResponse/varyingNames``.
        var varyingNames: [String]
    }

    /// The number of bytes that hold a file's header and metadata, read from its first
    /// ``headerLength`` bytes; nil when they are not a header of this format version.
    static func metadataEnd(header: Data) -> Int? {
        let bytes = [UInt8](header.prefix(headerLength))
        guard bytes.count == headerLength, Array(bytes[0..<4]) == magic,
              UInt16(bytes[4]) << 8 | UInt16(bytes[5]) == version else { return nil }
        return headerLength + bytes[6..<10].reduce(0) { $0 << 8 | Int($1) }
    }

    /// Reads the key and `Vary` names from a file's first ``metadataEnd(header:)`` bytes,
    /// without its body.
    /// - Parameter prefix: The file's header and metadata.
    /// - Returns: Nil when they do not decode.
    static func decodeVariantMetadata(_ prefix: Data) -> VariantMetadata? {
        guard let end = metadataEnd(header: prefix), prefix.count >= end,
              let metadata = try? JSONDecoder().decode(Metadata.self, from: prefix[(prefix.startIndex + headerLength)..<(prefix.startIndex + end)])
        else { return nil }
        return VariantMetadata(key: metadata.key, varyingNames: metadata.varyingRequestFields.map(\.name).sorted())
    }

    /// Whether an entry file holds one variant among several (its name has a second hash).
    static func isVariantFileName(_ name: String) -> Bool { name.contains("-") }

    /// Deserializes an entry file.
    /// - Parameter file: The file content.
    /// - Returns: The entry, or nil when the file is truncated, corrupt or of another
    ///   format version.
    static func decode(_ file: Data) -> CachedResponse? {
        // The header read once, by the same rule as a metadata-only read.
        guard let end = metadataEnd(header: file), file.count >= end else { return nil }
        let metadataStart = file.startIndex + headerLength
        let bodyStart = file.startIndex + end
        guard let metadata = try? JSONDecoder().decode(Metadata.self, from: file[metadataStart..<bodyStart]),
              file.endIndex - bodyStart == metadata.bodyByteCount
        else { return nil }
        var response = CachedResponse(
            key: metadata.key, url: metadata.url, status: metadata.status,
            responseFields: [], body: Data(file[bodyStart...]),
            requestFields: [], requestTime: metadata.requestTime, responseTime: metadata.responseTime)
        response.headerFields = metadata.headerFields
        response.varyingRequestFields = metadata.varyingRequestFields
        response.identityDigest = metadata.identityDigest
        return response
    }

    /// The file name of the entry stored under `storageKey` (see
    /// ``CachedResponse/storageKey``): the 64-bit FNV-1a hash of its cache key in hex, then,
    /// for one variant among several, `-` and the hash of the whole storage key. The cache key
    /// comes first so that the files of one URL are known from their names alone (after a
    /// restart, before any is read). The key is stored inside the file, so a hash collision
    /// only causes a miss.
    /// - Parameter storageKey: The storage key (a plain cache key for a response that varies
    ///   on nothing and speaks for nobody).
    /// - Returns: A name such as `cbf29ce484222325.httpcache` or
    ///   `cbf29ce484222325-af63bd4c8601b7df.httpcache`.
    static func fileName(for storageKey: String) -> String {
        let key = CachedResponse.cacheKey(ofStorageKey: storageKey)
        let variant = key == storageKey ? "" : "-" + hex(fnv1a64(storageKey.utf8))
        return urlPrefix(forKey: key) + variant + "." + fileExtension
    }

    /// What the names of all the files of one cache key begin with.
    /// - Parameter key: The cache key.
    /// - Returns: 16 hex digits.
    static func urlPrefix(forKey key: String) -> String { hex(fnv1a64(key.utf8)) }

    /// The ``urlPrefix(forKey:)`` an entry file's name begins with.
    /// - Parameter name: A name ``isEntryFileName(_:)`` accepts.
    /// - Returns: Its first 16 characters.
    static func urlPrefix(ofFileName name: String) -> String { String(name.prefix(16)) }

    /// Whether a directory entry is an entry file of ours (16 hex digits, optionally `-` and
    /// 16 more, then the extension).
    /// - Parameter name: A file name found in the cache directory.
    /// - Returns: True for names `fileName(for:)` can produce.
    static func isEntryFileName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1] == fileExtension else { return false }
        let hashes = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        return (1...2).contains(hashes.count) && hashes.allSatisfy { hash in
            hash.utf8.count == 16 && hash.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        }
    }

    /// A hash as 16 lowercase hex digits.
    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The 64-bit FNV-1a hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
    /// - Parameter bytes: The bytes to hash.
    /// - Returns: The hash value.
    static func fnv1a64(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
