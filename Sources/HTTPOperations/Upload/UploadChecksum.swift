import Crypto
import Foundation

/// tus's checksum extension: each append names a digest of its bytes (`Upload-Checksum:
/// <algorithm> <base64>`), and a server that finds another answers 460 and keeps none of them.
enum UploadChecksum {
    /// The algorithms this client computes, strongest first.
    enum Algorithm: String, Sendable, Codable, CaseIterable {
        case sha256, sha1, md5

        /// The strongest algorithm in `advertised` (a server's `Tus-Checksum-Algorithm` list), if any.
        static func strongest(of advertised: [String]) -> Algorithm? {
            let names = Set(advertised.map { $0.lowercased() })
            return allCases.first { names.contains($0.rawValue) }
        }

        /// The `Upload-Checksum` value for `bytes`.
        func headerValue(for bytes: Data) -> String {
            let digest: Data = switch self {
            case .sha256: Data(SHA256.hash(data: bytes))
            case .sha1: Data(Insecure.SHA1.hash(data: bytes))
            case .md5: Data(Insecure.MD5.hash(data: bytes))
            }
            return "\(rawValue) \(digest.base64EncodedString())"
        }
    }
}

/// What a server's `OPTIONS` answer says it supports: tus's `Tus-*` fields, or the IETF
/// draft's `Upload-Limit`.
struct UploadDiscovery: Sendable, Equatable {
    /// `Tus-Version`, in the server's order.
    var versions: [String] = []
    /// `Tus-Extension`.
    var extensions: Set<String> = []
    /// `Tus-Max-Size`, or `Upload-Limit`'s `max-size`.
    var maximumSize: Int64?
    /// `Tus-Checksum-Algorithm`.
    var checksumAlgorithms: [String] = []
    /// Whether the answer carried the draft's `Upload-Limit` (which a server that supports
    /// resumable uploads must send): only then may a creation say `Upload-Complete: ?0`.
    var advertisesUploadLimit = false
    /// `Upload-Limit`'s `max-append-size`: the most bytes one request may carry.
    var maximumAppendSize: Int64?

    /// Reads the fields from an answer's header value lookup.
    init(value: (String) -> String?) {
        func list(_ name: String) -> [String] {
            (value(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        versions = list("Tus-Version")
        extensions = Set(list("Tus-Extension").map { $0.lowercased() })
        maximumSize = value("Tus-Max-Size").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        checksumAlgorithms = list("Tus-Checksum-Algorithm")
        if let limit = value("Upload-Limit") {
            // A structured dictionary of integers; unknown keys are ignored, as the draft says.
            advertisesUploadLimit = true
            for member in limit.split(separator: ",") {
                let pair = member.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2, let number = Int64(pair[1]), number >= 0 else { continue }
                switch pair[0] {
                case "max-size": maximumSize = number
                case "max-append-size": maximumAppendSize = number
                default: break
                }
            }
        }
    }
}
