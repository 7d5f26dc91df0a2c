import Testing

/// The root of every suite. Serialized so that the memory measurements of one test see no
/// allocations of another; each test still runs many transfers concurrently on its own.
@Suite(.serialized) enum AllTests {}
