import Foundation

extension Notification.Name {
    /// Posted when a ``URLConnectionOperation`` starts its transfer, with the operation as the
    /// notification's object. Posted on the thread that called `start()`.
    public static let networkingOperationDidStart = Notification.Name("HTTPOperations.networkingOperationDidStart")

    /// Posted when a ``URLConnectionOperation`` finishes, successfully or not, with the
    /// operation as the notification's object. Posted on the operation's completion queue,
    /// after its completion callbacks, never on the network thread.
    public static let networkingOperationDidFinish = Notification.Name("HTTPOperations.networkingOperationDidFinish")
}
