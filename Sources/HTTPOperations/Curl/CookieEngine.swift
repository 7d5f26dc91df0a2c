import CCurl
import Foundation

/// The curl side of a ``CookieStore``: a share handle whose cookie engine every transfer of
/// the store uses, and a helper easy handle, never performed, through which the cookies are
/// loaded, listed, flushed to a file and cleared.
///
/// Confined to the network thread, like every curl call: no lock functions are set on the
/// share handle, because no other thread ever reaches it. Made on first use there, and
/// released there (``CookieStore``'s deinit hands the last reference to the thread).
final class CookieEngine {
    private let file: URL?
    private var share: UnsafeMutableRawPointer?
    private var helper: UnsafeMutableRawPointer?

    init(file: URL?) {
        self.file = file
    }

    deinit {
        if let helper {
            // No jar is set any more: cleanup writes nothing.
            curl_easy_cleanup(helper)
        }
        if let share { curl_share_cleanup(share) }
    }

    /// The share handle, made (and the file's cookies loaded) on first use.
    private func prepared() -> (share: UnsafeMutableRawPointer, helper: UnsafeMutableRawPointer) {
        if let share, let helper { return (share, helper) }
        let share = curl_share_init()!
        ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_COOKIE.rawValue))
        let helper = curl_easy_init()!
        ccurl_easy_setopt_pointer(helper, CURLOPT_SHARE, share)
        if let file, FileManager.default.fileExists(atPath: file.path) {
            ccurl_easy_setopt_string(helper, CURLOPT_COOKIEFILE, file.path)
            ccurl_easy_setopt_string(helper, CURLOPT_COOKIELIST, "RELOAD")
        }
        // Reading a file once is enough; "" keeps the engine on without a file.
        ccurl_easy_setopt_string(helper, CURLOPT_COOKIEFILE, "")
        self.share = share
        self.helper = helper
        return (share, helper)
    }

    /// Puts `easy` on this store's cookies: it sends the matching ones and keeps what
    /// responses set.
    func attach(_ easy: UnsafeMutableRawPointer) {
        let share = prepared().share
        ccurl_easy_setopt_pointer(easy, CURLOPT_SHARE, share)
        // An empty file name turns the cookie engine on without reading anything.
        ccurl_easy_setopt_string(easy, CURLOPT_COOKIEFILE, "")
    }

    /// Takes `easy` off the store, before the handle goes back to the pool.
    func detach(_ easy: UnsafeMutableRawPointer) {
        ccurl_easy_setopt_pointer(easy, CURLOPT_SHARE, nil)
    }

    /// Every cookie, one line each in the Netscape cookie-file format curl keeps them in.
    func lines() -> [String] {
        let helper = prepared().helper
        var list: UnsafeMutableRawPointer?
        guard ccurl_easy_getinfo_pointer(helper, CURLINFO_COOKIELIST, &list) == CURLE_OK, let list else { return [] }
        defer { curl_slist_free_all(list.assumingMemoryBound(to: curl_slist.self)) }
        var lines: [String] = []
        var node: UnsafeMutablePointer<curl_slist>? = list.assumingMemoryBound(to: curl_slist.self)
        while let current = node {
            if let data = current.pointee.data { lines.append(String(cString: data)) }
            node = current.pointee.next
        }
        return lines
    }

    /// Writes every cookie to `file` (curl writes it whole, in the Netscape format).
    func save(to file: URL) {
        let helper = prepared().helper
        ccurl_easy_setopt_string(helper, CURLOPT_COOKIEJAR, file.path)
        ccurl_easy_setopt_string(helper, CURLOPT_COOKIELIST, "FLUSH")
        // Cleared, so that nothing is written again when the helper is cleaned up.
        ccurl_easy_setopt_string(helper, CURLOPT_COOKIEJAR, nil)
    }

    /// Forgets every cookie.
    func removeAll() {
        ccurl_easy_setopt_string(prepared().helper, CURLOPT_COOKIELIST, "ALL")
    }
}
