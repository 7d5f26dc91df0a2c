import Foundation
import Synchronization

/// Caps on how many connections the process opens.
///
/// Every operation, whatever its manager, runs on the one network thread and its one curl
/// multi handle, so these limits are process-wide. Transfers beyond a limit wait in curl's
/// queue until a connection is free; to an HTTP/2 server they become streams on the
/// connections already open, so a burst of requests to one host stays on a few connections
/// instead of opening one each once the server's stream limit is reached.
public struct ConnectionLimits: Sendable, Equatable {
    /// The most connections open at once to one host and port
    /// (`CURLMOPT_MAX_HOST_CONNECTIONS`); 0 for no limit.
    public var perHost: Int
    /// The most connections open at once in all (`CURLMOPT_MAX_TOTAL_CONNECTIONS`); 0 for no
    /// limit.
    public var total: Int

    /// Limits; 0 means none.
    public init(perHost: Int = 0, total: Int = 0) {
        self.perHost = max(0, perHost)
        self.total = max(0, total)
    }

    /// No limit: curl's default, and ours.
    public static let unlimited = ConnectionLimits()

    private static let storage = Mutex(ConnectionLimits.unlimited)

    /// The limits in force. Setting them applies to the transfers curl starts from then on;
    /// connections already open stay open.
    public static var current: ConnectionLimits {
        get { storage.withLock { $0 } }
        set {
            storage.withLock { $0 = newValue }
            NetworkThread.shared.perform { NetworkThread.shared.multi.apply(newValue) }
        }
    }
}
