import Foundation
@testable import HTTPOperations
import HTTPTestServer
import Testing

extension AllTests.HTTPCacheOperations {
    /// The cache's promise as a property: **an answer is the origin's current one, unless a
    /// stored answer was allowed; and a stored answer is only ever one the origin gave for the
    /// same URL, the same `Vary` field and the same credential.**
    ///
    /// Steps drawn from a seed, run one after another on one manager with one cache (memory,
    /// or memory and disk): GETs with a random `cachePolicy`, `X-Lang` and `Authorization` of
    /// resources whose answers carry random directives (`max-age=600`, `max-age=0`,
    /// `no-cache`, `no-store`, `must-revalidate`, `private`), validators and `Vary`; the origin
    /// moving a resource to its next version; POSTs that invalidate. The server counts every
    /// request, so the oracle knows, after each step, whether a request was sent.
    ///
    /// The oracle, after every step:
    /// - answered with no request sent ⇒ the policy allows a stored answer
    ///   (`returnCacheData…`) or the resource's answers are fresh (`max-age=600` without
    ///   `no-cache` or `no-store`) and the request did not ask for `no-cache`; never for
    ///   `no-store` answers;
    /// - its body is then one the origin gave since the last invalidation for that URL with
    ///   the same `X-Lang` (if it varies) and the same `Authorization`;
    /// - answered after a request ⇒ the body is the origin's current version;
    /// - every body names the request's `X-Lang` when the resource varies on it;
    /// - `.returnCacheDataDontLoad` never sends, and fails with `.resourceUnavailable` when
    ///   it could not answer;
    /// - liveness: a fresh answer the cache was given for the same selection (`X-Lang` if the
    ///   resource varies, `Authorization`) since the last invalidation is answered without a
    ///   request, and it is the latest such answer: languages and users do not evict each
    ///   other's answer (several variants per URL). Not checked for credentialed requests
    ///   when the memory tier is the small one of a disk campaign: those never go to disk.
    ///
    /// `HTTPOPERATIONS_SEED` replays a campaign; `HTTPOPERATIONS_CACHE_STEPS` sets the count
    /// (2,000 here, 150 under a sanitizer).
    @Test(.timeLimit(.minutes(5)))
    func answersAreNeverStaleForeignOrInvented() async throws {
        var generator = SeededGenerator(for: "answersAreNeverStaleForeignOrInvented")
        let count = ProcessInfo.processInfo.environment["HTTPOPERATIONS_CACHE_STEPS"].flatMap(Int.init) ?? {
            #if HTTPOPERATIONS_TSAN || HTTPOPERATIONS_ASAN
            return 150
            #else
            return 2000
            #endif
        }()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpcache-campaign-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let onDisk = Bool.random(using: &generator)
        // A small memory tier, so entries are evicted to (or lost from) the disk tier too.
        let cache = try HTTPCache(memoryCapacity: onDisk ? 600 : 4 << 20, diskCapacity: onDisk ? 1 << 20 : 0,
                                  directory: onDisk ? directory : nil)
        let manager = Self.manager(cache)
        let resources = (0..<6).map { CampaignResource(index: $0, using: &generator) }
        var model = CacheCampaignModel(resources: resources, memoryMayLoseCredentialed: onDisk)
        var violations: [String] = []
        for step in 0..<count {
            let action = CacheCampaignAction(using: &generator, resources: resources.count)
            if let violation = try await action.run(on: manager, resources: resources, model: &model) {
                violations.append("step \(step) (\(action)): \(violation)")
            }
        }
        print("answersAreNeverStaleForeignOrInvented: \(count) steps, \(onDisk ? "memory and disk" : "memory"), "
              + "\(cache.statistics), \(violations.count) violations (seed \(generator.seed))")
        print("  resources: " + resources.map(\.description).joined(separator: "; "))
        for violation in violations.prefix(5) { print("  \(violation)") }
        #expect(violations.isEmpty, "\(violations.count) violations; replay with HTTPOPERATIONS_SEED=\(generator.seed)")
    }
}

/// A resource of the campaign: its server key and what its answers carry.
struct CampaignResource: Sendable, CustomStringConvertible {
    let key: String
    let cacheControl: String
    let etag: Bool
    let lastModified: Bool
    let varies: Bool

    init(index: Int, using generator: inout SeededGenerator) {
        key = "campaign\(index)-\(UUID().uuidString.prefix(8))"
        cacheControl = ["max-age=600", "max-age=600", "max-age=0", "no-cache", "no-store", "max-age=0, must-revalidate",
                        "private, max-age=600", "max-age=600, no-cache"].randomElement(using: &generator)!
        etag = Bool.random(using: &generator)
        lastModified = Bool.random(using: &generator)
        varies = Int.random(in: 0..<3, using: &generator) == 0
    }

    var url: URL {
        testServer.url(.cacheable(key: key, cacheControl: cacheControl, etag: etag, lastModified: lastModified,
                                  vary: varies ? "X-Lang" : nil))
    }

    /// Whether a stored answer may be used without asking, for a request without `no-cache`.
    var description: String {
        "\(cacheControl)\(etag ? ", ETag" : "")\(lastModified ? ", Last-Modified" : "")\(varies ? ", Vary" : "")"
    }

    var isFresh: Bool { cacheControl.contains("max-age=600") && !cacheControl.contains("no-cache") }
    var isNeverStored: Bool { cacheControl.contains("no-store") }
}

/// What the origin has said, as the oracle needs it.
struct CacheCampaignModel {
    /// Per resource: its current version, and the bodies it gave since the last invalidation,
    /// each with the `Authorization` of the request it answered.
    var versions: [Int]
    var given: [[(body: String, authorization: String?)]]
    /// The latest answer stored for each selection (resource, `X-Lang` if it varies,
    /// `Authorization`) since the last invalidation, for the liveness check.
    var latestStored: [String: String] = [:]
    /// Whether a credentialed answer may be evicted (the small memory tier of a disk
    /// campaign): the liveness check skips those.
    let memoryMayLoseCredentialed: Bool

    init(resources: [CampaignResource], memoryMayLoseCredentialed: Bool) {
        versions = Array(repeating: 0, count: resources.count)
        given = Array(repeating: [], count: resources.count)
        self.memoryMayLoseCredentialed = memoryMayLoseCredentialed
    }

    /// The selection a request falls in for resource `index`.
    static func selection(_ index: Int, _ resource: CampaignResource, language: String, authorization: String?) -> String {
        "\(index) \(resource.varies ? language : "*") \(authorization ?? "anonymous")"
    }
}

/// One step of the campaign.
enum CacheCampaignAction: CustomStringConvertible {
    case get(resource: Int, policy: URLRequest.CachePolicy, language: String, authorization: String?, noCache: Bool)
    case change(resource: Int)
    case post(resource: Int)

    init(using generator: inout SeededGenerator, resources: Int) {
        let resource = Int.random(in: 0..<resources, using: &generator)
        switch Int.random(in: 0..<20, using: &generator) {
        case 0..<2: self = .change(resource: resource)
        case 2: self = .post(resource: resource)
        default:
            let policy: URLRequest.CachePolicy = [.useProtocolCachePolicy, .useProtocolCachePolicy, .useProtocolCachePolicy,
                                                  .reloadIgnoringLocalCacheData, .reloadRevalidatingCacheData,
                                                  .returnCacheDataElseLoad, .returnCacheDataDontLoad].randomElement(using: &generator)!
            self = .get(resource: resource, policy: policy, language: ["en", "fr"].randomElement(using: &generator)!,
                        authorization: [nil, nil, "Bearer alice", "Bearer bob"].randomElement(using: &generator)!,
                        noCache: Int.random(in: 0..<8, using: &generator) == 0)
        }
    }

    var description: String {
        switch self {
        case .get(let resource, let policy, let language, let authorization, let noCache):
            "GET \(resource) \(policy) \(language) \(authorization ?? "anonymous")\(noCache ? " no-cache" : "")"
        case .change(let resource): "change \(resource)"
        case .post(let resource): "POST \(resource)"
        }
    }

    /// Runs the step and checks the oracle; returns the violation, if any.
    func run(on manager: HTTPRequestOperationManager, resources: [CampaignResource], model: inout CacheCampaignModel) async throws -> String? {
        switch self {
        case .change(let index):
            testServer.changeCacheable(resources[index].key)
            model.versions[index] += 1
            return nil
        case .post(let index):
            let post = try await AllTests.HTTPCacheOperations.get(resources[index].url, on: manager, method: "POST")
            guard post.error == nil else { return "the POST failed: \(String(describing: post.error))" }
            model.given[index] = []
            model.latestStored = model.latestStored.filter { !$0.key.hasPrefix("\(index) ") }
            return nil
        case .get(let index, let policy, let language, let authorization, let noCache):
            let resource = resources[index]
            var headers = ["X-Lang": language]
            if let authorization { headers["Authorization"] = authorization }
            if noCache { headers["Cache-Control"] = "no-cache" }
            let before = testServer.requestCount(forResumableKey: resource.key)
            let operation = try await AllTests.HTTPCacheOperations.get(resource.url, on: manager, policy: policy, headers: headers)
            let sent = testServer.requestCount(forResumableKey: resource.key) - before
            let body = AllTests.HTTPCacheOperations.body(operation)
            let current = "\(resource.key) version \(model.versions[index])" + (resource.varies ? " for \(language)" : "")
            if policy == .returnCacheDataDontLoad {
                if sent != 0 { return "sent \(sent) requests under returnCacheDataDontLoad" }
                if let error = operation.error {
                    return (error as? URLError)?.code == .resourceUnavailable ? nil : "failed with \(error)"
                }
            }
            if let error = operation.error { return "failed: \(error)" }
            if sent > 1 { return "\(sent) requests for one GET" }
            let selection = CacheCampaignModel.selection(index, resource, language: language, authorization: authorization)
            let mustHit = policy == .useProtocolCachePolicy && !noCache && resource.isFresh
                && !(authorization != nil && model.memoryMayLoseCredentialed)
            var missed: String?
            if mustHit, let latest = model.latestStored[selection], sent != 0 || body != latest {
                missed = "answered \"\(body)\" after \(sent) requests, though \"\(latest)\" was stored fresh for this selection"
            }
            if sent == 1 {
                guard body == current else { return "answered \"\(body)\" after a request, not the current \"\(current)\"" }
                model.given[index].append((body, authorization))
                if resource.isFresh { model.latestStored[selection] = body }
                return missed
            }
            if let missed { return missed }
            // Answered from the cache.
            let storedAllowed = policy == .returnCacheDataElseLoad || policy == .returnCacheDataDontLoad
                || (policy == .useProtocolCachePolicy && resource.isFresh && !noCache)
            if !storedAllowed { return "answered \"\(body)\" without a request, which nothing allowed" }
            if resource.isNeverStored { return "answered \"\(body)\" without a request for a no-store resource" }
            if resource.varies, !body.hasSuffix(" for \(language)") { return "answered \"\(body)\" to a request for \(language)" }
            guard model.given[index].contains(where: { $0.body == body && $0.authorization == authorization }) else {
                return "answered \"\(body)\" from the cache, which the origin never gave to \(authorization ?? "an anonymous request") since the last invalidation"
            }
            return nil
        }
    }
}
