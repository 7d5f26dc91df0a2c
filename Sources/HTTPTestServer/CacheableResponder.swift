import Foundation
import NIOCore
import NIOHTTP1

extension RequestRouter {
    /// Answers `/cacheable/<key>?...` (see ``Endpoint/cacheable(key:cacheControl:etag:lastModified:vary:)``):
    /// a small body naming the resource's version, with the validators and freshness asked
    /// for, and a 304 to a conditional request that names the current version.
    ///
    /// Every request is counted under `key`, and the 304s also under `key#304`
    /// (``TestServer/requestCount(forResumableKey:)``); ``TestServer/changeCacheable(_:)``
    /// moves the resource to its next version.
    func cacheable(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, key: String, query: [String: String]) {
        _ = counters.next(key)
        let version = counters.count(key + "#version")
        var fields: [(String, String)] = [("Date", Self.httpDate(Date()))]
        if let cacheControl = query["cc"] { fields.append(("Cache-Control", cacheControl)) }
        let etag = query["etag"] == "1" ? "\"v\(version)\"" : nil
        if let etag { fields.append(("ETag", etag)) }
        // A fixed date per version, a day apart, long past: heuristic freshness stays 0 unless asked.
        let lastModified = query["lastModified"] == "1"
            ? Self.httpDate(Date(timeIntervalSince1970: 1_600_000_000 + Double(version) * 86_400)) : nil
        if let lastModified { fields.append(("Last-Modified", lastModified)) }
        var varying = ""
        if let vary = query["vary"] {
            fields.append(("Vary", vary))
            varying = " for \(head.headers.first(name: vary) ?? "-")"
        }
        let notModified = (etag != nil && head.headers.first(name: "If-None-Match") == etag)
            || (etag == nil && lastModified != nil && head.headers.first(name: "If-Modified-Since") == lastModified)
        // `X-Contradict: 1` on a conditional request: a 304 naming another version, as a
        // server behind a load balancer with differing ETags may answer.
        let contradicts = head.headers.first(name: "X-Contradict") == "1" && head.headers.contains(name: "If-None-Match")
        if notModified || contradicts {
            _ = counters.next(key + "#304")
            if contradicts { fields = fields.filter { $0.0 != "ETag" } + [("ETag", "\"another\"")] }
            writeHead(context, head, status: 304, headers: HTTPHeaders(fields))
            return finish(context, head)
        }
        respond(context, head, status: 200, body: Data("\(key) version \(version)\(varying)".utf8), extra: fields)
    }

    /// An IMF-fixdate (RFC 9110 §5.6.7).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
