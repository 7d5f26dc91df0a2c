import Foundation

/// Accepting a response from its head, without building an `HTTPURLResponse`.
///
/// `HTTPURLResponse.init` canonicalises every header name with Foundation's string APIs; on a
/// small GET that cost more CPU than everything else we do per request (Docs/Performance.md).
/// The library's own serializers need only the status code and MIME type to validate, and
/// read the response only to describe an error. So for exactly them (they are marked
/// ``HeadOnlyDecoding``, which no other module can adopt) an operation first tries to accept
/// the response from its head. Anything else (a refusal, a decoding error, a user's
/// serializer) takes the ordinary path with the built response, which gives the
/// authoritative answer and error; so this path can only say yes where the ordinary one
/// says yes too.
protocol HeadOnlyDecoding: ValidatingResponseSerializer {}

extension HeadOnlyDecoding {
    /// The decoded body, when the head alone shows the response is accepted and the body
    /// decodes; nil when the ordinary path must decide (it then builds the response).
    func objectAcceptedFromHead(_ head: ResponseHead, data: Data?) -> AcceptedObject? {
        // Without acceptable types the MIME type judges nothing, and the library's decoders
        // do not read it: not read at all then (the default `HTTPResponseSerializer`).
        let mimeType: String?
        if acceptableContentTypes == nil {
            mimeType = nil
        } else {
            guard case .plain(let read) = head.contentTypeReading else { return nil }
            mimeType = read
        }
        guard rejections(statusCode: head.statusCode, mimeType: mimeType, data: data).isEmpty,
              let object = try? AcceptedObject(decode(response: nil, data: data)) else {
            return nil
        }
        return object
    }
}

/// A response serializer, with whether it is one of the library's own worked out once, when
/// it is set: a protocol cast is too dear to ask per response (Docs/Performance.md). A
/// manager keeps one for all its operations.
struct ChosenResponseSerializer: Sendable {
    /// The serializer.
    let serializer: any URLResponseSerialization
    /// The same serializer, when it is one of the library's own and can judge from the head.
    let headJudge: (any HeadOnlyDecoding)?

    /// `serializer`, whichever it is (one protocol cast).
    init(_ serializer: any URLResponseSerialization) {
        self.serializer = serializer
        headJudge = serializer as? any HeadOnlyDecoding
    }

    /// One of the library's own serializers (no cast).
    init(own serializer: some HeadOnlyDecoding) {
        self.serializer = serializer
        headJudge = serializer
    }

    /// The serializer when it validates before decoding (so can decode a refused body); the
    /// cast only for a serializer not of the library's own, and only when asked.
    var validating: (any ValidatingResponseSerializer)? {
        if let headJudge { return headJudge }
        return serializer as? any ValidatingResponseSerializer
    }

    /// The default of an operation: an ``HTTPResponseSerializer``.
    static let data = ChosenResponseSerializer(own: HTTPResponseSerializer())
}

/// A body a serializer accepted and decoded; `value` may be nil (an empty body).
struct AcceptedObject {
    let value: Any?

    init(_ value: Any?) { self.value = value }
}

/// How `Content-Type` reads without Foundation's parser.
enum ContentTypeReading: Equatable {
    /// No `Content-Type` (nil), or one whose media type is plain token characters and `/`,
    /// lower-cased: Foundation reads it the same way.
    case plain(String?)
    /// Anything else (quotes, spaces, escapes, an empty or repeated field): only Foundation's
    /// reading counts.
    case unusual
}

extension ResponseHead {
    /// The MIME type of `Content-Type`, when reading it needs no more than the bytes. Read
    /// from the head's bytes: one `String`, the result, per response.
    var contentTypeReading: ContentTypeReading {
        switch onlyValueBytes(of: "Content-Type") {
        case .none:
            return .plain(nil)
        case .many:
            return .unusual
        case .one(let value):
            let mediaType = value.prefix { $0 != UInt8(ascii: ";") }
            guard !mediaType.isEmpty, mediaType.allSatisfy(Self.isMIMETypeByte) else { return .unusual }
            return .plain(String(unsafeUninitializedCapacity: mediaType.count) { buffer in
                for (index, byte) in mediaType.enumerated() { buffer[index] = asciiLowercased(byte) }
                return mediaType.count
            })
        }
    }

    /// RFC 9110 token characters, and the `/` between type and subtype.
    private static func isMIMETypeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "/!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
