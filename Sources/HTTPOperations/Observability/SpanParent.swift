import Tracing

extension URLConnectionOperation {
    /// The tracer of an operation's span and the context the span is a child of.
    ///
    /// Kept in the operation's state, out of its shared settings (``SharedSettings``): both are
    /// captured from task-locals when an operation is made, so under a bootstrapped tracer or
    /// a bound context every operation has them, and in the settings each would have made
    /// its own copy of all of them. Immutable: a change makes a new one.
    final class SpanParent: Sendable {
        let tracer: (any Tracer)?
        let context: ServiceContext?

        private init(tracer: (any Tracer)?, context: ServiceContext?) {
            self.tracer = tracer
            self.context = context
        }

        /// The pair, or nil when it holds nothing (most operations: no tracer, no context).
        static func make(tracer: (any Tracer)?, context: ServiceContext?) -> SpanParent? {
            tracer == nil && context == nil ? nil : SpanParent(tracer: tracer, context: context)
        }
    }
}

extension URLConnectionOperation.State {
    /// The tracer of the operation's span; nil traces nothing.
    var tracer: (any Tracer)? {
        get { spanParent?.tracer }
        set { spanParent = .make(tracer: newValue, context: spanParent?.context) }
    }

    /// The context the span is a child of: the task's, when the operation was made.
    var serviceContext: ServiceContext? {
        get { spanParent?.context }
        set { spanParent = .make(tracer: spanParent?.tracer, context: newValue) }
    }
}
