import Foundation

/// Accepting a response from its head, without building an `HTTPURLResponse`.
///
/// `HTTPURLResponse.init` canonicalises every header name with Foundation's string APIs; on a
/// small GET that cost more CPU than everything else we do per request (perf: 17% of the
/// process). The library's own serializers need only the status code and MIME type to
/// validate, and read the response only to describe an error. So for exactly them — not for
/// subclasses, which may read anything — an operation first tries to accept the response from
/// its head. Anything else (a refusal, a decoding error, a user's serializer) takes the
/// ordinary path with the built response, which gives the authoritative answer and error;
/// so this path can only say yes where the ordinary one says yes too.
extension HTTPResponseSerializer {
    /// The library's serializers whose decoding reads the response only to describe an error.
    private static let headOnlyTypes: Set<ObjectIdentifier> = [
        ObjectIdentifier(HTTPResponseSerializer.self), ObjectIdentifier(JSONResponseSerializer.self),
        ObjectIdentifier(PropertyListResponseSerializer.self), ObjectIdentifier(XMLParserResponseSerializer.self),
        ObjectIdentifier(XMLDocumentResponseSerializer.self), ObjectIdentifier(ImageResponseSerializer.self),
    ]

    /// Whether serializers of `type` are the library's own (not a subclass) and can judge a
    /// response from its head: read once per serializer, into ``judgesFromHead``.
    static func judgesFromHead(_ type: HTTPResponseSerializer.Type) -> Bool {
        type is any HeadOnlyDecoding.Type || headOnlyTypes.contains(ObjectIdentifier(type))
    }

    /// The decoded body, when the head alone shows the response is accepted and the body
    /// decodes; nil when the ordinary path must decide (it then builds the response).
    func objectAcceptedFromHead(_ head: ResponseHead, data: Data?) -> AcceptedObject? {
        guard judgesFromHead, case .plain(let mimeType) = head.contentTypeReading,
              rejections(statusCode: head.statusCode, mimeType: mimeType, data: data).isEmpty,
              let object = try? AcceptedObject(decode(response: nil, data: data)) else {
            return nil
        }
        return object
    }
}

/// A body a serializer accepted and decoded; `value` may be nil (an empty body).
struct AcceptedObject {
    let value: Any?

    init(_ value: Any?) { self.value = value }
}

/// Marks a serializer that cannot be subclassed and decodes without reading the response
/// except to describe an error (``DecodableResponseSerializer``, which is generic, so it
/// cannot be named in a list of types).
protocol HeadOnlyDecoding {}

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
