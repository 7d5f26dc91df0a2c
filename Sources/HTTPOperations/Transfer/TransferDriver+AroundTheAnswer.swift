import Foundation

/// What comes around the answer on a transfer: informational (1xx) heads before it, trailer
/// fields after its body. Neither is a machine event: neither can change what is held.
extension TransferDriver {
    func transfer(_ transfer: CurlTransfer, didReceiveInformational head: ResponseHead) {
        assertOnNetworkThread()
        guard transfer === self.transfer, let block = informationalBlock else { return }
        let (operation, url) = (self.operation, request.url!)
        // Built and told on the callback queue, in order with the operation's other callbacks.
        callbackQueue.async(group: completionGroup) { block(operation, head.httpURLResponse(for: url)) }
    }

    func transfer(_ transfer: CurlTransfer, didReceiveTrailers trailers: ResponseHead) {
        assertOnNetworkThread()
        // Kept for the transfer that delivers the answer; the next transfer starts without.
        guard transfer === self.transfer else { return }
        self.trailers = trailers
    }
}
