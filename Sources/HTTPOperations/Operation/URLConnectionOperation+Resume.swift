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
    ///   `ResumeData(from: data)`.
    public convenience init(resumeData: ResumeData) {
        self.init(request: resumeData.request)
        continueDownload(from: resumeData)
    }

    /// Makes this (not yet started) operation continue the download `resumeData` describes.
    func continueDownload(from resumeData: ResumeData) {
        state.withLock { state in
            state.settings.download.destination = resumeData.destination ?? state.settings.download.destination
            state.settings.download.continuing = true
            state.settings.download.validator = resumeData.validator
            state.settings.download.entityTag = resumeData.entityTag
            state.settings.download.lastModified = resumeData.lastModified
            state.settings.download.knownLength = resumeData.expectedLength
        }
    }
}

extension HTTPRequestOperation {
    /// Creates an operation that downloads `request` to `file`, continuing from what the file
    /// holds when resume data for it was saved beside it (by a paused, failed or killed
    /// download), or starting afresh otherwise.
    ///
    /// Resume data names the URL first asked for (before any redirect), so a download that was
    /// redirected continues; one saved for a different resource (see
    /// ``ResumeData/continues(_:)``, which lets a pre-signed URL's query change), or naming
    /// another destination file, is ignored, and the download starts afresh. The request is
    /// used as given, so credentials and other header fields are sent again.
    ///
    /// - Parameters:
    ///   - request: The request for the resource.
    ///   - file: The destination file.
    /// - Returns: The operation, and the resume data it continues from, if any.
    public static func download(_ request: URLRequest, to file: URL) -> (operation: HTTPRequestOperation, resumingFrom: ResumeData?) {
        let operation = HTTPRequestOperation(request: request)
        operation.destinationURL = file
        let sidecar = ResumeData.sidecarURL(for: file)
        // Saved resume data for another resource, or naming another file, is not followed:
        // a sidecar must never send a download somewhere the caller did not ask.
        guard let saved = try? Data(contentsOf: sidecar), let resumeData = try? ResumeData(from: saved),
              let url = request.url, resumeData.continues(url),
              resumeData.destination.map({ $0.standardizedFileURL.path == file.standardizedFileURL.path }) ?? true,
              FileManager.default.fileExists(atPath: file.path) else {
            return (operation, nil)
        }
        operation.continueDownload(from: resumeData)
        return (operation, resumeData)
    }
}
