import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cookies kept between requests: what responses set (`Set-Cookie`) is sent back with later
/// requests that match the cookie's domain, path and `Secure` flag, by curl's cookie engine
/// (RFC 6265 matching; a cookie for `api.example.com` never goes to `example.org`).
///
/// Put one in a manager's ``HTTPRequestOperationManager/defaultConfiguration`` and every
/// operation it makes shares it, or in one operation's (``OperationConfiguration/cookieStore``). A request
/// whose `httpShouldHandleCookies` is false neither sends nor stores cookies. Without a store
/// (the default) no cookie is kept, and only a `Cookie` header the request sets itself is
/// sent.
///
/// The cookies live in memory, on the network thread; a store made with a file loads it on
/// first use and writes it only when ``save()`` is called, in the Netscape cookie-file format
/// that curl and wget read (`httpop --cookie-jar` uses the same file).
public final class CookieStore: Sendable {
    /// The file the cookies are loaded from and saved to; nil for memory only.
    public let file: URL?
    /// The curl side, touched on the network thread only; released there too (see `deinit`).
    let engine: Handover<CookieEngine>
    /// The thread that runs the store's own work: the process's network thread, which also
    /// runs every transfer that uses the store (tests give one they can stop).
    private let thread: NetworkThread
    /// Unique to this store, for as long as the process runs: what an ``HTTPCache`` matches
    /// `Vary: Cookie` on (an object's address may be reused by the next store).
    let identity = UUID()

    /// A store, empty or loaded from `file` when it exists.
    public convenience init(persistingTo file: URL? = nil) {
        self.init(persistingTo: file, thread: .shared)
    }

    init(persistingTo file: URL?, thread: NetworkThread) {
        self.file = file
        self.engine = Handover(CookieEngine(file: file))
        self.thread = thread
    }

    deinit {
        // The share handle is curl's: the last reference goes on the network thread, where
        // no transfer can be using it (a transfer of this store holds the store).
        let engine = engine
        thread.perform { _ = engine }
    }

    /// Every cookie held, as `HTTPCookie` values.
    public func cookies() async -> [HTTPCookie] {
        await onNetworkThread { $0.lines() }.compactMap(Self.cookie(fromNetscapeLine:))
    }

    /// Writes every cookie to ``file``.
    ///
    /// - Throws: `CocoaError(.fileWriteNoPermission)` style errors: `CocoaError(.fileNoSuchFile)`
    ///   when the store has no file, `CocoaError(.fileWriteUnknown)` when curl wrote nothing.
    public func save() async throws {
        guard let file else { throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "This cookie store has no file."]) }
        // The jar holds credentials. curl makes a new one with the process's default mode
        // (0644 under the usual umask) and gives its replacement the mode of the file it
        // replaces: made first, empty and private, it stays the owner's only. One that exists
        // keeps its mode. Here, not on the network thread, which makes no file system call.
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        let made = descriptor >= 0
        if made { close(descriptor) }
        await onNetworkThread { $0.save(to: file) }
        // curl says nothing when it cannot write: a jar made here and still empty was not written.
        let written = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int).flatMap { $0 } ?? 0
        guard FileManager.default.fileExists(atPath: file.path), !made || written > 0 else {
            if made { try? FileManager.default.removeItem(at: file) }
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
        }
    }

    /// Forgets every cookie (the file, if any, is left as it is until the next ``save()``).
    public func removeAll() async {
        await onNetworkThread { $0.removeAll() }
    }

    /// Runs `work` on the network thread; once that thread has stopped (a shutdown with
    /// `stoppingNetworkThread`), on the caller's, which is then the only one left to touch the
    /// store: its cookies are still there to list and save (an empty stand-in there would make
    /// `save()` after a shutdown write an empty file over the jar).
    private func onNetworkThread<T: Sendable>(_ work: @escaping @Sendable (CookieEngine) -> T) async -> T {
        let engine = engine
        return await withCheckedContinuation { continuation in
            let queued = thread.perform { continuation.resume(returning: work(engine.value)) }
            if !queued { continuation.resume(returning: work(engine.value)) }
        }
    }

    /// A cookie from one line of the Netscape format: domain, subdomains flag, path, secure
    /// flag, expiry (Unix time, 0 for a session cookie), name, value, separated by tabs; a
    /// domain prefixed `#HttpOnly_` marks an HttpOnly cookie.
    static func cookie(fromNetscapeLine line: String) -> HTTPCookie? {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard fields.count >= 7 else { return nil }
        var domain = fields[0]
        let httpOnly = domain.hasPrefix("#HttpOnly_")
        if httpOnly { domain.removeFirst("#HttpOnly_".count) }
        var properties: [HTTPCookiePropertyKey: Any] = [
            .domain: domain,
            .path: fields[2],
            .name: fields[5],
            .value: fields[6...].joined(separator: "\t"),
        ]
        if fields[3] == "TRUE" { properties[.secure] = "TRUE" }
        if let expiry = TimeInterval(fields[4]), expiry > 0 {
            properties[.expires] = Date(timeIntervalSince1970: expiry)
        } else {
            properties[.discard] = "TRUE"
        }
        if httpOnly { properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE" }
        return HTTPCookie(properties: properties)
    }
}
