import Crypto
import Foundation
import Synchronization

/// What a server proved on a connection, for a server-trust block to judge: AFNetworking's
/// `willSendRequestForAuthenticationChallenge` for server trust, on Linux.
public struct ServerTrust: Sendable {
    /// The host the request goes to.
    public let host: String
    /// Its port.
    public let port: Int
    /// The certification path verified for the connection, leaf first, anchor last (with
    /// invalid certificates allowed: the certificates whose signatures chain from the leaf).
    /// Not what the server sent: a certificate it appended on no verified path is not here.
    public let certificates: [TLSCertificate]
    /// The policy the chain already passed (a block can refuse more, never accept what the
    /// policy refused).
    public let policy: SecurityPolicy

    /// What identifies this server's chain to the approvals: host, port and every
    /// certificate's fingerprint (hashed once, when the trust is made).
    let approvalKey: String

    init(host: String, port: Int, certificates: [TLSCertificate], policy: SecurityPolicy) {
        self.host = host
        self.port = port
        self.certificates = certificates
        self.policy = policy
        self.approvalKey = "\(host.lowercased()):\(port) " + certificates.map(\.fingerprint).joined(separator: ",")
    }
}

/// Judges a server the operation is about to send to; true lets the request go. Runs on the
/// completion queue, never on the network thread.
public typealias ServerTrustEvaluationBlock = @Sendable (_ operation: URLConnectionOperation, _ trust: ServerTrust) -> Bool

/// A server-trust block, and the servers it approved. Shared by the operations that were
/// given the same block (a manager's), so a server is asked about once, and their
/// connections are kept apart from every other operation's: its identity is part of the
/// CA blob libcurl compares (see Docs/Security.md).
final class ServerTrustEvaluation: Sendable {
    let block: ServerTrustEvaluationBlock
    /// Part of libcurl's connection match.
    private let identity = UUID().uuidString
    /// Approval keys of servers the block trusted.
    private let approved = Mutex<Set<String>>([])
    /// The CA blob for each policy it is used with, made once.
    private let blobs = Mutex<[String: Data]>([:])

    init(_ block: @escaping ServerTrustEvaluationBlock) {
        self.block = block
    }

    func isApproved(_ trust: ServerTrust) -> Bool {
        approved.withLock { $0.contains(trust.approvalKey) }
    }

    func approve(_ trust: ServerTrust) {
        _ = approved.withLock { $0.insert(trust.approvalKey) }
    }

    /// The CA blob for `policy` under this block: a line naming the block, then the
    /// policy's anchors (or the system's). nil when they cannot be read (the transfer then
    /// keeps the policy's own settings and is refused by the pre-request check).
    func anchors(for policy: SecurityPolicy) -> Data? {
        if let blob = blobs.withLock({ $0[policy.identity] }) { return blob }
        var blob = Data("HTTPOperations server-trust block \(identity)\n".utf8)
        if let anchors = policy.anchors {
            blob.append(anchors)
        } else if let system = try? SystemAuthorities.bundle() {
            blob.append(system)
        } else {
            return nil
        }
        blobs.withLock { $0[policy.identity] = blob }
        return blob
    }
}
