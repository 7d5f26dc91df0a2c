import Foundation
@testable import HTTPOperations

/// A fixed reference time: 2023-11-14 22:13:20 UTC.
let cacheEpoch = Date(timeIntervalSince1970: 1_700_000_000)

/// The key used by most tests.
let cacheTestKey = "GET https://example.com/a"

/// A date `seconds` after `cacheEpoch`.
func cacheTime(_ seconds: TimeInterval) -> Date { cacheEpoch.addingTimeInterval(seconds) }

/// IMF-fixdate text for a time `seconds` after `cacheEpoch`.
func cacheHTTPDate(_ seconds: TimeInterval) -> String { HTTPDate.format(cacheTime(seconds)) }

/// Builds a stored response received at `cacheEpoch` (request sent at `cacheEpoch`) unless told otherwise.
func makeCachedResponse(
    key: String = cacheTestKey, status: Int = 200,
    fields: [(name: String, value: String)], body: String = "hello",
    requestFields: [(name: String, value: String)] = [],
    requestTime: Date = cacheEpoch, responseTime: Date = cacheEpoch
) -> CachedResponse {
    CachedResponse(
        key: key, url: String(key.dropFirst(4)), status: status, responseFields: fields,
        body: Data(body.utf8), requestFields: requestFields,
        requestTime: requestTime, responseTime: responseTime)
}

/// A compact, comparable description of a plan for assertions.
enum CachePlanKind: Equatable {
    case network(store: Bool), answer(stale: Bool), revalidate, unavailable
}

extension CachePlan {
    /// The plan's case, without its payload.
    var kind: CachePlanKind {
        switch self {
        case .network(let store): .network(store: store)
        case .answer(_, let stale): .answer(stale: stale)
        case .revalidate: .revalidate
        case .unavailable: .unavailable
        }
    }

    /// The conditional fields of a `.revalidate` plan, as comparable pairs.
    var conditionalPairs: [[String]] {
        guard case .revalidate(_, let fields) = self else { return [] }
        return fields.map { [$0.name, $0.value] }
    }
}

/// A new empty directory under the system temporary directory.
func makeCacheDirectory() -> URL {
    FileManager.default.temporaryDirectory
        .appendingPathComponent("cachelab-\(UUID().uuidString)", isDirectory: true)
}

/// The POSIX permission bits of a file.
func permissions(of url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// The names of the entry files in a directory.
func cacheEntryFiles(in directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path)
        .filter { $0.hasSuffix(".httpcache") }.sorted()
}
