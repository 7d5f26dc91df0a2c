import Foundation

/// The parts of a `multipart/form-data` body, appended in order by the block given to
/// ``URLRequestSerialization/multipartFormRequest(method:urlString:parameters:constructingBodyWith:)``.
///
/// Nothing is read when a part is appended: files are opened and read only as curl asks for
/// bytes, so a body of any size streams in a few buffers. A file that cannot be read is
/// refused when it is appended, before anything is sent. Not thread-safe: fill it from the
/// block, on one thread.
public final class MultipartFormData {
    /// One part: its header fields and where its bytes come from.
    struct Part {
        enum Source {
            case data(Data)
            case file(URL)
            case stream(InputStream)
        }

        var headers: [(name: String, value: String)]
        var source: Source
        var length: Int64
    }

    /// The boundary between parts: random for each request.
    public let boundary: String
    private(set) var parts: [Part] = []
    private(set) var throttle: (packetSize: Int, delay: TimeInterval)?

    init() {
        let random = (0..<2).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }
        boundary = "HTTPOperations.boundary." + random.joined(separator: ".")
    }

    /// Appends a file, named after itself, with the MIME type of its extension.
    ///
    /// - Throws: ``RequestSerializationError`` with `.unreadableFile` when it is missing, a
    ///   folder, or unreadable.
    public func appendPart(fileURL: URL, name: String) throws {
        try appendPart(fileURL: fileURL, name: name, fileName: fileURL.lastPathComponent,
                       mimeType: MIMEType.forFileName(fileURL.lastPathComponent))
    }

    /// Appends a file with the given file name and MIME type.
    ///
    /// - Throws: ``RequestSerializationError`` with `.unreadableFile`.
    public func appendPart(fileURL: URL, name: String, fileName: String, mimeType: String) throws {
        guard fileURL.isFileURL else {
            throw RequestSerializationError(.unreadableFile(fileURL, detail: "not a file URL"))
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: fileURL.path, isDirectory: &isFolder) else {
            throw RequestSerializationError(.unreadableFile(fileURL, detail: "no such file"))
        }
        guard !isFolder.boolValue else {
            throw RequestSerializationError(.unreadableFile(fileURL, detail: "it is a folder"))
        }
        guard FileManager.default.isReadableFile(atPath: fileURL.path),
              let size = (try? FileManager.default.attributesOfItem(atPath: fileURL.path))?[.size] as? NSNumber else {
            throw RequestSerializationError(.unreadableFile(fileURL, detail: "permission denied"))
        }
        parts.append(Part(headers: Self.headers(name: name, fileName: fileName, mimeType: mimeType),
                          source: .file(fileURL), length: size.int64Value))
    }

    /// Appends `length` bytes read from `inputStream` as curl asks for them. A body with such
    /// a part cannot be sent twice (a 307 redirect or an authentication round fails it).
    public func appendPart(inputStream: InputStream, name: String, fileName: String, length: Int64, mimeType: String) {
        parts.append(Part(headers: Self.headers(name: name, fileName: fileName, mimeType: mimeType),
                          source: .stream(inputStream), length: length))
    }

    /// Appends bytes as a file.
    public func appendPart(fileData: Data, name: String, fileName: String, mimeType: String) {
        parts.append(Part(headers: Self.headers(name: name, fileName: fileName, mimeType: mimeType),
                          source: .data(fileData), length: Int64(fileData.count)))
    }

    /// Appends a plain form field.
    public func appendPart(formData: Data, name: String) {
        parts.append(Part(headers: [("Content-Disposition", "form-data; name=\"\(Self.quoted(name))\"")],
                          source: .data(formData), length: Int64(formData.count)))
    }

    /// Appends a part with exactly these header fields.
    public func appendPart(headers: [String: String], body: Data) {
        parts.append(Part(headers: headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                          source: .data(body), length: Int64(body.count)))
    }

    /// Sends the body at most `packetSize` bytes per `delay` seconds. curl paces the upload,
    /// so no thread sleeps.
    public func throttleBandwidth(packetSize: Int, delay: TimeInterval) {
        throttle = (max(1, packetSize), max(0.001, delay))
    }

    /// Throws ``SecurityError`` `.invalidHeaderField` when a part's header field would split
    /// the body (a MIME type or a field given to ``appendPart(headers:body:)`` with CR or LF).
    func checkHeaderFields() throws {
        for part in parts {
            for field in part.headers {
                try HTTPFieldValidation.check(name: field.name, value: field.value)
            }
        }
    }

    private static func headers(name: String, fileName: String, mimeType: String) -> [(name: String, value: String)] {
        [("Content-Disposition", "form-data; name=\"\(quoted(name))\"; filename=\"\(quoted(fileName))\""),
         ("Content-Type", mimeType)]
    }

    /// A name safe inside a quoted header parameter: quotes and line breaks escaped as the
    /// WHATWG form encoding does.
    private static func quoted(_ name: String) -> String {
        name.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }
}
