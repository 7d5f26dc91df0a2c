import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A host as libcurl connects to it, for every decision made per host (security policies,
/// same-origin checks on redirects, the origins that answer over HTTP/1.x).
///
/// Foundation's `URL.host` keeps a host as written: `127.1`, `2130706433`, `0x7f000001` and
/// `0177.0.0.1` stay four different hosts, while libcurl's URL parser reads each as an IPv4
/// address the way `inet_aton` does (WHATWG's IPv4 parser) and connects to `127.0.0.1`. A
/// decision keyed by the spelling could be dodged by respelling. So an IPv4 address in any of
/// those forms is written dotted-decimal, an IPv6 address in its RFC 5952 form, and a name
/// lower-cased without a trailing dot (DNS reads `a.example.` as `a.example`).
enum HostName {
    /// `host` as curl connects to it; see the type's discussion.
    static func canonical(_ host: String) -> String {
        var text = host.lowercased()
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if text.count > 1, text.hasSuffix(".") { text.removeLast() }
        if text.contains(":") { return ipv6(text) ?? text }
        return ipv4(text) ?? text
    }

    /// The dotted-decimal form of an IPv4 address in any form `inet_aton` reads (one to four
    /// parts, each decimal, octal with a leading 0, or hexadecimal with 0x); nil for a name.
    private static func ipv4(_ text: String) -> String? {
        // Only digits, dots and the x and a–f of hexadecimal parts: anything else is a name
        // (inet_aton would also take trailing garbage after a space, which a host cannot hold).
        guard let last = text.last, last != ".",
              text.utf8.allSatisfy({ (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x78 || (0x61...0x66).contains($0) }),
              text.utf8.contains(where: { (0x30...0x39).contains($0) }) else { return nil }
        var address = in_addr()
        guard inet_aton(text, &address) != 0 else { return nil }
        return String(cString: inet_ntoa(address))
    }

    /// The RFC 5952 form of an IPv6 address; nil when it is not one.
    private static func ipv6(_ text: String) -> String? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        let text = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: text, as: UTF8.self)
    }
}
