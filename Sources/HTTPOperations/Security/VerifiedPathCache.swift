import Foundation

/// The certification paths the pin check parsed lately, by their DER: every pinned request
/// is checked against its connection's verified path (see ``ServerTrustCheck``), and a kept
/// connection shows the same path request after request, so parsing it each time (two or three
/// certificates through swift-certificates, each SubjectPublicKeyInfo hashed) would cost more
/// than the request. The key is the DER itself, compared byte for byte, never a pointer: an
/// OpenSSL object's address can be reused by another connection's.
///
/// Confined to the network thread (``CurlMulti`` owns it), so it needs no lock.
final class VerifiedPathCache {
    private struct Entry {
        let path: [Data]
        let certificates: [TLSCertificate]
    }

    /// Most recently used first.
    private var entries: [Entry] = []
    private let capacity: Int

    init(capacity: Int = 16) {
        self.capacity = capacity
    }

    /// The certificates of `path`, parsed once while it stays among the last `capacity`
    /// paths seen; a path that does not parse is not kept (its error comes back each time).
    func certificates(of path: [Data], parse: ([Data]) throws -> [TLSCertificate]) throws -> [TLSCertificate] {
        if let index = entries.firstIndex(where: { $0.path == path }) {
            let entry = entries[index]
            if index != 0 {
                entries.remove(at: index)
                entries.insert(entry, at: 0)
            }
            return entry.certificates
        }
        let certificates = try parse(path)
        entries.insert(Entry(path: path, certificates: certificates), at: 0)
        if entries.count > capacity { entries.removeLast() }
        return certificates
    }
}
