import Foundation

/// Validates a response and reads its body as an ``Image``: format and pixel size from the
/// header, and the bytes.
///
/// Defaults: status 200–299; the image types AFNetworking 2.0 accepted (`image/tiff`,
/// `image/jpeg`, `image/gif`, `image/png`, `image/ico`, `image/x-icon`, `image/bmp`,
/// `image/x-bmp`, `image/x-xbitmap`, `image/x-win-bitmap`) and `image/webp`.
public struct ImageResponseSerializer: ValidatingResponseSerializer, HeadOnlyDecoding {
    /// The status codes that pass validation. Default 200–299.
    public var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    /// The MIME types that pass validation, compared case-insensitively. Default: the image
    /// types above.
    public var acceptableContentTypes: Set<String>? = [
        "image/tiff", "image/jpeg", "image/gif", "image/png", "image/ico", "image/x-icon",
        "image/bmp", "image/x-bmp", "image/x-xbitmap", "image/x-win-bitmap", "image/webp",
    ]

    /// Creates a serializer with the defaults above.
    public init() {}

    /// Reads the image header, without validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.unreadableImage`.
    public func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        guard let image = Image(data: data) else {
            throw ResponseSerializationError(.unreadableImage, response: response, data: data)
        }
        return image
    }
}
