import Foundation

/// Freshness and age of a stored response (RFC 9111 §4.2), as seen by a private cache.
extension CachedResponse {
    /// Status codes that are heuristically cacheable by default (RFC 9110 §15.1).
    static let heuristicallyCacheableStatuses: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The upper bound of a heuristic lifetime; §4.2.2 only suggests 10% of the time since
    /// Last-Modified, and a day keeps long-unchanged resources from living for months.
    static let heuristicLifetimeCap: TimeInterval = 86_400

    /// The response's `Cache-Control` directives.
    var cacheControl: CacheControl { CacheControl(fields: fieldList) }

    /// The `Date` field value, or the time the response arrived when it is missing or
    /// invalid (RFC 9110 §6.6.1 lets a recipient use the receipt time).
    var dateValue: Date {
        HeaderFieldList.firstValue(named: "Date", in: fieldList).flatMap(HTTPDate.parse) ?? responseTime
    }

    /// The `Age` field in seconds (§5.1), 0 when absent or not delta-seconds. A list
    /// (`Age: 7200, 0`, or two fields) is read by its first member, as §5.1 asks.
    var ageValue: TimeInterval {
        HeaderFieldList.listElements(named: "Age", in: fieldList).first
            .flatMap(CacheControl.deltaSeconds)
            .map(TimeInterval.init) ?? 0
    }

    /// Whether the response states its own lifetime with `max-age` or `Expires`, which
    /// forbids heuristics (§4.2.2). `s-maxage` is ignored: this is a private cache.
    var hasExplicitFreshness: Bool {
        cacheControl.maxAge != nil || HeaderFieldList.contains("Expires", in: fieldList)
    }

    /// How long the response stays fresh after it was generated (§4.2.1).
    ///
    /// In order: `max-age`; else `Expires` minus `Date` (an unparseable Expires such as
    /// "0" means already expired, §5.3); else a heuristic (§4.2.2) of 10% of the time
    /// between `Last-Modified` and `Date`, capped at one day, for heuristically cacheable
    /// statuses only; else zero.
    var freshnessLifetime: TimeInterval {
        if let maxAge = cacheControl.maxAge {
            return TimeInterval(maxAge)
        }
        if let expires = HeaderFieldList.firstValue(named: "Expires", in: fieldList) {
            guard let expiresDate = HTTPDate.parse(expires) else { return 0 }
            return max(0, expiresDate.timeIntervalSince(dateValue))
        }
        guard Self.heuristicallyCacheableStatuses.contains(status),
              let lastModified = lastModified.flatMap(HTTPDate.parse)
        else { return 0 }
        let sinceModification = dateValue.timeIntervalSince(lastModified)
        return min(max(0, sinceModification * 0.1), Self.heuristicLifetimeCap)
    }

    /// The response's current age, computed exactly as §4.2.3 specifies.
    /// - Parameter now: The current time.
    /// - Returns: The age in seconds.
    func currentAge(now: Date) -> TimeInterval {
        let apparentAge = max(0, responseTime.timeIntervalSince(dateValue))
        // The wall clock may step back: an interval it gives is never negative, so an age
        // never is (a negative `Age` on a hit) and never shrinks below what was received.
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedAgeValue = ageValue + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now.timeIntervalSince(responseTime))
        return correctedInitialAge + residentTime
    }

    /// Whether the response is still fresh: its lifetime exceeds its age (§4.2).
    /// - Parameter now: The current time.
    /// - Returns: True while the response may be served without validation.
    func isFresh(now: Date) -> Bool {
        freshnessLifetime > currentAge(now: now)
    }
}
