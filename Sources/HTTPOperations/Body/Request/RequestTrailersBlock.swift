/// Gives the trailer fields of a streamed request body, once the stream ended (a checksum of
/// what was read, for one). Declared with the request body, which the curl layer reads, so that
/// the curl layer needs nothing of the operation's.
public typealias RequestTrailersBlock = @Sendable () -> [(name: String, value: String)]
