import Foundation

/// MIME types by file extension, for multipart parts whose type is not given. A built-in
/// table of the types servers meet every day; anything else is `application/octet-stream`.
public enum MIMEType {
    private static let byExtension: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "csv": "text/csv", "tsv": "text/tab-separated-values",
        "html": "text/html", "htm": "text/html", "css": "text/css", "md": "text/markdown", "xml": "application/xml",
        "js": "text/javascript", "mjs": "text/javascript", "json": "application/json", "yaml": "application/yaml",
        "yml": "application/yaml", "plist": "application/x-plist", "pdf": "application/pdf", "rtf": "application/rtf",
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar",
        "bz2": "application/x-bzip2", "xz": "application/x-xz", "7z": "application/x-7z-compressed", "zst": "application/zstd",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "bmp": "image/bmp",
        "tif": "image/tiff", "tiff": "image/tiff", "ico": "image/x-icon", "webp": "image/webp", "svg": "image/svg+xml",
        "heic": "image/heic", "avif": "image/avif", "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg",
        "m4a": "audio/mp4", "flac": "audio/flac", "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime",
        "webm": "video/webm", "mkv": "video/x-matroska", "avi": "video/x-msvideo", "wasm": "application/wasm",
        "doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint", "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "epub": "application/epub+zip", "woff": "font/woff",
        "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf", "bin": "application/octet-stream",
        "iso": "application/x-iso9660-image", "dmg": "application/x-apple-diskimage", "deb": "application/vnd.debian.binary-package",
        "sql": "application/sql", "swift": "text/x-swift", "c": "text/x-c", "h": "text/x-c", "py": "text/x-python",
    ]

    /// The MIME type for a file name's extension, compared case-insensitively.
    public static func forFileName(_ name: String) -> String {
        let ext = (name as NSString).pathExtension.lowercased()
        return byExtension[ext] ?? "application/octet-stream"
    }
}
