import CoreMetrics
import Foundation
import Logging

/// The accessors that ``OperationConfiguration`` replaced, one per field, kept for one minor
/// version so that code moves at its own pace (CHANGELOG.md has the table). Each reads and
/// writes the operation's ``URLConnectionOperation/configuration``, refused after start like it.
extension URLConnectionOperation {
    /// The longest the whole operation may take: ``OperationConfiguration/totalTimeout``.
    @available(*, deprecated, message: "use configuration.totalTimeout")
    public var totalTimeout: Duration? {
        get { configuration.totalTimeout }
        set { changeSettings("totalTimeout") { $0.configuration.totalTimeout = newValue } }
    }

    /// The policy of each host this operation may reach: ``OperationConfiguration/securityPolicies``.
    @available(*, deprecated, message: "use configuration.securityPolicies")
    public var securityPolicies: HostSecurityPolicies {
        get { configuration.securityPolicies }
        set { changeSettings("securityPolicies") { $0.configuration.securityPolicies = newValue } }
    }

    /// Header fields dropped when a redirect leaves the origin: ``OperationConfiguration/sensitiveHeaderFields``.
    @available(*, deprecated, message: "use configuration.sensitiveHeaderFields")
    public var sensitiveHeaderFields: Set<String> {
        get { configuration.sensitiveHeaderFields }
        set { changeSettings("sensitiveHeaderFields") { $0.configuration.sensitiveHeaderFields = newValue } }
    }

    /// The URL schemes the operation may use: ``OperationConfiguration/allowedSchemes``.
    @available(*, deprecated, message: "use configuration.allowedSchemes")
    public var allowedSchemes: Set<String> {
        get { configuration.allowedSchemes }
        set { changeSettings("allowedSchemes") { $0.configuration.allowedSchemes = newValue } }
    }

    /// How the operation's connections reach the server: ``OperationConfiguration/route``.
    @available(*, deprecated, message: "use configuration.route")
    public var route: NetworkRoute {
        get { configuration.route }
        set { changeSettings("route") { $0.configuration.route = newValue } }
    }

    /// The cookies the operation sends and keeps: ``OperationConfiguration/cookieStore``.
    @available(*, deprecated, message: "use configuration.cookieStore")
    public var cookieStore: CookieStore? {
        get { configuration.cookieStore }
        set { changeSettings("cookieStore") { $0.configuration.cookieStore = newValue } }
    }

    /// The HTTP cache the operation asks and stores in: ``OperationConfiguration/cache``.
    @available(*, deprecated, message: "use configuration.cache")
    public var cache: HTTPCache? {
        get { configuration.cache }
        set { changeSettings("cache") { $0.configuration.cache = newValue } }
    }

    /// Where the operation logs: ``OperationConfiguration/logger``.
    @available(*, deprecated, message: "use configuration.logger")
    public var logger: Logger {
        get { configuration.logger }
        set { changeSettings("logger") { $0.configuration.logger = newValue } }
    }

    /// The swift-metrics factory the operation reports to: ``OperationConfiguration/metricsFactory``.
    @available(*, deprecated, message: "use configuration.metricsFactory")
    public var metricsFactory: (any MetricsFactory)? {
        get { configuration.metricsFactory }
        set {
            // Made outside the lock: it makes the instruments (the factory is the caller's code).
            let metrics = newValue.flatMap { RequestMetrics(factory: $0) }
            changeSettings("metricsFactory") { $0.configuration.metrics = metrics }
        }
    }
}
