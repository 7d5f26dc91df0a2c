import Foundation

extension URLConnectionOperation {
    /// Creates an operation that continues the download `resumeData` describes.
    ///
    /// The request is rebuilt from it (set credentials again: they are never saved); the
    /// body goes on into its destination file, from the bytes really on disk, with `Range` and
    /// `If-Range`. The server's answer decides: the rest is appended, or the whole resource is
    /// taken again from byte 0, or the operation fails with ``ResumeError`` and the file is
    /// left as it was.
    ///
    /// - Parameter resumeData: From ``resumeData``, or read back with
    ///   ``ResumeData/init(from:)``.
    public convenience init(resumeData: ResumeData) {
        self.init(request: resumeData.request)
        state.withLock { state in
            state.download.destination = resumeData.destination
            state.download.continuing = true
            state.download.validator = resumeData.validator
            state.download.knownLength = resumeData.expectedLength
        }
    }
}

extension HTTPRequestOperation {
    /// Creates an operation that downloads `url` to `file`, continuing from what the file
    /// holds when resume data for it was saved beside it (by a paused, failed or killed
    /// download), or starting afresh otherwise.
    ///
    /// Saved resume data for a different URL is ignored, and the download starts afresh.
    ///
    /// - Parameters:
    ///   - url: The resource.
    ///   - file: The destination file.
    /// - Returns: The operation, and the resume data it continues from, if any.
    public static func download(_ url: URL, to file: URL) -> (operation: HTTPRequestOperation, resumingFrom: ResumeData?) {
        let sidecar = ResumeData.sidecarURL(for: file)
        if let saved = try? Data(contentsOf: sidecar), let resumeData = try? ResumeData(from: saved),
           resumeData.url == url, FileManager.default.fileExists(atPath: file.path) {
            var continued = resumeData
            continued.destination = file
            return (HTTPRequestOperation(resumeData: continued), continued)
        }
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        operation.destinationURL = file
        return (operation, nil)
    }
}
