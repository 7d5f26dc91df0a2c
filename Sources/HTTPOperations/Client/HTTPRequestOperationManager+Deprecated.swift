import CoreMetrics
import Foundation
import Logging

/// The accessors that ``HTTPRequestOperationManager/defaultConfiguration`` replaced, kept for
/// one minor version (CHANGELOG.md has the table). Each reads and writes the configuration the
/// manager gives the operations it makes from then on.
extension HTTPRequestOperationManager {
    /// The longest the whole operation may take: ``OperationConfiguration/totalTimeout``.
    @available(*, deprecated, message: "use defaultConfiguration.totalTimeout")
    public var totalTimeout: Duration? {
        get { defaultConfiguration.totalTimeout }
        set { changeDefaults { $0.totalTimeout = newValue } }
    }

    /// Header fields dropped when a redirect leaves the origin: ``OperationConfiguration/sensitiveHeaderFields``.
    @available(*, deprecated, message: "use defaultConfiguration.sensitiveHeaderFields")
    public var sensitiveHeaderFields: Set<String> {
        get { defaultConfiguration.sensitiveHeaderFields }
        set { changeDefaults { $0.sensitiveHeaderFields = newValue } }
    }

    /// The URL schemes the operation may use: ``OperationConfiguration/allowedSchemes``.
    @available(*, deprecated, message: "use defaultConfiguration.allowedSchemes")
    public var allowedSchemes: Set<String> {
        get { defaultConfiguration.allowedSchemes }
        set { changeDefaults { $0.allowedSchemes = newValue } }
    }

    /// How the operation's connections reach the server: ``OperationConfiguration/route``.
    @available(*, deprecated, message: "use defaultConfiguration.route")
    public var route: NetworkRoute {
        get { defaultConfiguration.route }
        set { changeDefaults { $0.route = newValue } }
    }

    /// The cookies the operation sends and keeps: ``OperationConfiguration/cookieStore``.
    @available(*, deprecated, message: "use defaultConfiguration.cookieStore")
    public var cookieStore: CookieStore? {
        get { defaultConfiguration.cookieStore }
        set { changeDefaults { $0.cookieStore = newValue } }
    }

    /// The HTTP cache the operation asks and stores in: ``OperationConfiguration/cache``.
    @available(*, deprecated, message: "use defaultConfiguration.cache")
    public var cache: HTTPCache? {
        get { defaultConfiguration.cache }
        set { changeDefaults { $0.cache = newValue } }
    }

    /// Where the operation logs: ``OperationConfiguration/logger``.
    @available(*, deprecated, message: "use defaultConfiguration.logger")
    public var logger: Logger {
        get { defaultConfiguration.logger }
        set { changeDefaults { $0.logger = newValue } }
    }

    /// The swift-metrics factory the manager's operations report to: ``OperationConfiguration/metricsFactory``.
    @available(*, deprecated, message: "use defaultConfiguration.metricsFactory")
    public var metricsFactory: (any MetricsFactory)? {
        get { defaultConfiguration.metricsFactory }
        set {
            // Made outside the lock: it makes the instruments (the factory is the caller's code).
            let metrics = newValue.flatMap { RequestMetrics(factory: $0) }
            changeDefaults { $0.metrics = metrics }
        }
    }
}
