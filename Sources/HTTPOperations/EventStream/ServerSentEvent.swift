import Foundation

/// One event of a `text/event-stream` answer (Server-Sent Events), as the WHATWG HTML
/// standard's event-stream section defines it: dispatched at a blank line, with the lines of
/// its `data` fields joined by line feeds.
public struct ServerSentEvent: Sendable, Hashable, CustomStringConvertible {
    /// The event's type: its last `event` field, or `"message"` when it had none.
    public var event: String
    /// Its `data` fields, joined with `"\n"` (no line feed after the last).
    public var data: String
    /// The stream's last event id when the event was dispatched: set by an `id` field of this
    /// event or of an earlier one (across reconnections), empty when none was ever set. It is
    /// what a reconnection sends as `Last-Event-ID`.
    public var lastEventID: String

    /// Creates an event.
    public init(event: String = "message", data: String, lastEventID: String = "") {
        self.event = event
        self.data = data
        self.lastEventID = lastEventID
    }

    /// Decodes ``data`` as JSON into `type`.
    ///
    /// - Throws: ``ResponseSerializationError`` (code `.decodingFailed`) with the decoder's
    ///   error as its underlying error, when the data is not a `T`.
    public func decode<T: Decodable>(_ type: T.Type, using decoder: JSONDecoder = JSONDecoder()) throws -> T {
        do {
            return try decoder.decode(T.self, from: Data(data.utf8))
        } catch {
            throw ResponseSerializationError(.decodingFailed(detail: "\(error)"), response: nil, data: Data(data.utf8), underlying: error)
        }
    }

    /// `event: data` with the id, for logs.
    public var description: String {
        lastEventID.isEmpty ? "\(event): \(data)" : "\(event) [\(lastEventID)]: \(data)"
    }
}
