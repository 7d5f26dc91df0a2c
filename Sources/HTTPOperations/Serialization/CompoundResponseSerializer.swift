import Foundation

/// Tries several serializers in order: the first that accepts the response (validates and
/// decodes) wins; when none does, the error lists every one's reason.
public struct CompoundResponseSerializer: URLResponseSerialization {
    /// The serializers, in the order they are tried.
    public let serializers: [any URLResponseSerialization]

    /// Creates a compound of `serializers`.
    public init(_ serializers: [any URLResponseSerialization]) {
        self.serializers = serializers
    }

    /// The first serializer's object that accepts the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.noSerializerAccepted`, carrying each error.
    public func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        var errors: [any Error] = []
        for serializer in serializers {
            do {
                return try serializer.responseObject(for: response, data: data)
            } catch {
                errors.append(error)
            }
        }
        throw ResponseSerializationError(.noSerializerAccepted(errors), response: response, data: data)
    }
}
