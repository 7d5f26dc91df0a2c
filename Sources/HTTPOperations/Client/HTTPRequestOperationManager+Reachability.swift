import Foundation

extension HTTPRequestOperationManager {
    /// Whether the operation queue is suspended while ``reachabilityManager`` says the host
    /// cannot be reached, and resumed when it can, as AFNetworking 2's managers did. Off by
    /// default; turning it on starts the reachability manager.
    ///
    /// Suspending holds operations that have not started; running ones go on, and a download
    /// that loses its connection resumes with `Range` through its retry policy. An unknown
    /// status (before the first look) does not suspend.
    public var suspendsWhileUnreachable: Bool {
        get { settings.withLock { $0.reachabilityObserver != nil } }
        set {
            if newValue {
                guard settings.withLock({ $0.reachabilityObserver == nil }) else { return }
                let queue = operationQueue
                let observer = NotificationCenter.default.addObserver(
                    forName: NetworkReachabilityManager.didChangeNotification, object: reachabilityManager, queue: nil
                ) { notification in
                    guard let status = notification.userInfo?[NetworkReachabilityManager.statusUserInfoKey]
                        as? NetworkReachabilityManager.Status else { return }
                    queue.isSuspended = status == .notReachable
                }
                settings.withLock { $0.reachabilityObserver = Handover(observer) }
                reachabilityManager.startMonitoring()
                // A status seen before the observer was there.
                if reachabilityManager.status == .notReachable { queue.isSuspended = true }
            } else {
                guard let observer = settings.withLock({ settings in
                    defer { settings.reachabilityObserver = nil }
                    return settings.reachabilityObserver
                }) else { return }
                NotificationCenter.default.removeObserver(observer.value)
                operationQueue.isSuspended = false
            }
        }
    }
}
