import Foundation

/// Validates a response and reads its body as an ``Image``: format and pixel size from the
/// header, and the bytes.
///
/// Defaults: status 200–299; the image types AFNetworking 2.0 accepted (`image/tiff`,
/// `image/jpeg`, `image/gif`, `image/png`, `image/ico`, `image/x-icon`, `image/bmp`,
/// `image/x-bmp`, `image/x-xbitmap`, `image/x-win-bitmap`) and `image/webp`.
open class ImageResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    // @unchecked Sendable: no state of its own beyond the superclass's.

    /// Creates a serializer with the defaults above.
    public override init() {
        super.init()
        acceptableContentTypes = ["image/tiff", "image/jpeg", "image/gif", "image/png", "image/ico", "image/x-icon",
                                  "image/bmp", "image/x-bmp", "image/x-xbitmap", "image/x-win-bitmap", "image/webp"]
    }

    /// Reads the image header, without validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.unreadableImage`.
    open override func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        guard let image = Image(data: data) else {
            throw ResponseSerializationError(.unreadableImage, response: response, data: data)
        }
        return image
    }
}
