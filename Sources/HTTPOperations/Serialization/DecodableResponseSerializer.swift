import Foundation

/// A type that has a value for an empty body, so that a HEAD, 204 or 205 response can be
/// decoded as it.
public protocol EmptyResponseDecodable {
    /// The value an empty body stands for.
    static var emptyValue: Self { get }
}

/// The value of a response that has no body.
public struct EmptyResponse: Decodable, Sendable, Equatable, EmptyResponseDecodable {
    /// Creates the empty value.
    public init() {}
    public static var emptyValue: EmptyResponse { EmptyResponse() }
}

extension Optional: EmptyResponseDecodable {
    public static var emptyValue: Optional<Wrapped> { nil }
}

/// Validates a response and decodes its JSON body into `T` with a `JSONDecoder`.
///
/// Defaults: status 200–299; content types `application/json`, `text/json`,
/// `text/javascript` (an empty body needs none). An empty body is `T.emptyValue` for a
/// response to HEAD or with status 204 or 205 when `T` is ``EmptyResponseDecodable`` (an
/// `Optional`, or ``EmptyResponse``); otherwise it is an error.
public struct DecodableResponseSerializer<T: Decodable>: ValidatingResponseSerializer, HeadOnlyDecoding {
    /// The status codes that pass validation. Default 200–299.
    public var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    /// The MIME types that pass validation, compared case-insensitively. Default
    /// ``JSONResponseSerializer/jsonContentTypes``.
    public var acceptableContentTypes: Set<String>? = JSONResponseSerializer.jsonContentTypes
    /// The decoder; configure it before the serializer is set. A class: every copy of the
    /// serializer shares it.
    public let decoder: JSONDecoder

    /// The request was a HEAD (set by the typed async `head`): an empty body is its answer,
    /// whatever the response's `Content-Length` says.
    var answersHead = false

    /// Creates a serializer decoding with `decoder`.
    public init(decoder: JSONDecoder = JSONDecoder()) {
        self.decoder = decoder
    }

    /// A serializer for the answer to a HEAD: nothing to decode, so no content type to check.
    static func answeringHead(decoder: JSONDecoder) -> Self {
        var serializer = Self(decoder: decoder)
        serializer.answersHead = true
        serializer.acceptableContentTypes = nil
        return serializer
    }

    /// Decodes `T` from the body, without validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.decodingFailed` or `.emptyBody`.
    public func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else {
            let status = (response as? HTTPURLResponse)?.statusCode
            var head = answersHead
            if !head, let response { head = Self.isHeadResponse(response) }
            if let value = emptyBodyValue(as: T.self, status: status, answersHead: head) { return value }
            throw ResponseSerializationError(.emptyBody, response: response, data: data)
        }
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw ResponseSerializationError(.decodingFailed(detail: "\(error)"), response: response, data: data, underlying: error)
        }
    }

    /// The value for `response` and `data`, typed.
    ///
    /// - Throws: As ``URLResponseSerialization/responseObject(for:data:)``.
    public func value(for response: URLResponse?, data: Data?) throws -> T {
        try typedResponseObject(try responseObject(for: response, data: data), as: T.self, response: response, data: data)
    }

    /// Whether `response` answers a HEAD request. Foundation's response does not say; a
    /// response that announces a body (Content-Length > 0) and arrived without one can only
    /// be one: a GET whose body went missing fails in transport first.
    private static func isHeadResponse(_ response: URLResponse) -> Bool {
        guard let http = response as? HTTPURLResponse else { return false }
        return (http.value(forHTTPHeaderField: "Content-Length").flatMap(Int.init) ?? 0) > 0
    }
}

/// What an empty body stands for as a `Value`: an ``EmptyResponseDecodable``'s empty value
/// where an answer has no body (a 204, a 205, a HEAD's), an optional's nil whatever the
/// status; nil when an empty body is no `Value`. The rule of every door that decodes.
func emptyBodyValue<Value>(as type: Value.Type, status: Int?, answersHead: Bool) -> Value? {
    let mayBeEmpty = status == 204 || status == 205 || answersHead
    guard let empty = Value.self as? EmptyResponseDecodable.Type, mayBeEmpty || Value.self is ExpressibleByNilLiteral.Type else {
        return nil
    }
    return empty.emptyValue as? Value
}

/// `object` as a `Value`: what a serializer made, checked (the typed async door's one cast).
///
/// - Throws: ``ResponseSerializationError`` with `.emptyBody` when there is no object and
///   `Value` needs one, or `.decodingFailed` naming both types when it is of another type.
func typedResponseObject<Value>(_ object: Any?, as valueType: Value.Type, response: @autoclosure () -> URLResponse?,
                                data: @autoclosure () -> Data?) throws -> Value {
    if let value = object as? Value { return value }
    guard let object else { throw ResponseSerializationError(.emptyBody, response: response(), data: data()) }
    throw ResponseSerializationError(.decodingFailed(detail: "expected a \(Value.self), the serializer made a \(type(of: object))"),
                                     response: response(), data: data())
}
