import Crypto
import Foundation

/// Checks a finished download against an expected length and SHA-256. Runs on the completion
/// queue: it may read a whole file.
struct IntegrityCheck: Sendable {
    var expectedSHA256: String?
    var expectedLength: Int64?
    /// The file the body went to; nil when it is in memory.
    var file: URL?

    /// The first mismatch (``IntegrityError``), the reason the file could not be read
    /// (`URLError(.cannotOpenFile)`), or nil when everything expected matches.
    func verify(memory: Data?) -> (any Error)? {
        guard expectedSHA256 != nil || expectedLength != nil else { return nil }
        var hasher = SHA256()
        var length: Int64 = 0
        if let file {
            let handle: FileHandle
            do {
                handle = try FileHandle(forReadingFrom: file)
            } catch {
                // Not a length mismatch: nothing could be measured.
                return URLError(.cannotOpenFile, url: file,
                                description: "The download at \(file.path) could not be read to verify it: \(error.localizedDescription)")
            }
            defer { try? handle.close() }
            while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                hasher.update(data: chunk)
                length += Int64(chunk.count)
            }
        } else if let memory {
            hasher.update(data: memory)
            length = Int64(memory.count)
        }
        if let expectedLength, expectedLength != length {
            return IntegrityError(reason: .lengthMismatch(expected: expectedLength, actual: length))
        }
        if let expected = expectedSHA256 {
            let actual = hasher.finalize().lowercaseHex
            if actual != expected {
                return IntegrityError(reason: .checksumMismatch(expected: expected, actual: actual))
            }
        }
        return nil
    }
}
