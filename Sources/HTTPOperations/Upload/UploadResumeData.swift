import Foundation

/// What a resumable upload of a file needs to go on after a restart: where it lives on the
/// server, which file it sends (its path and identity), and what the server confirmed.
///
/// Save ``encoded()`` when ``ResumableUploadOperation/setResumeDataHandler(_:)`` hands it
/// over (before every request that may send bytes, so a crash at any moment leaves a file
/// that is safe to resume from), and give it back to
/// ``ResumableUploadOperation/init(request:resumeData:configuration:)``. The offset is asked
/// of the server again before any byte goes; the file is measured again first, and a file that
/// changed is ``UploadError/Reason/fileChanged(path:)``.
public struct UploadResumeData: Sendable, Hashable, Codable {
    /// The format's version, for the readers of files written by an older one.
    var version = 1
    /// The protocol the upload speaks.
    var uploadProtocol: ResumableUploadProtocol
    /// The upload's URL on the server.
    public var uploadURL: URL
    /// The file sent.
    public var fileURL: URL
    /// The file's identity when the upload began.
    var file: UploadFileIdentity
    /// The offset the server last confirmed.
    public var acknowledgedOffset: Int64
    /// The end of every byte handed to a request so far: a server that reports more is lying.
    var sentOffset: Int64
    /// The tus checksum algorithm the server and this client agreed on, if any.
    var checksumAlgorithm: String?
    /// When the server said it will forget the upload (tus `Upload-Expires`), if it said.
    public var expires: Date?

    /// The JSON form, to save.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }

    /// Reads what ``encoded()`` wrote.
    public init(encoded: Data) throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        self = try decoder.decode(UploadResumeData.self, from: encoded)
    }

    init(uploadProtocol: ResumableUploadProtocol, uploadURL: URL, fileURL: URL, file: UploadFileIdentity,
         acknowledgedOffset: Int64, sentOffset: Int64, checksumAlgorithm: String?, expires: Date?) {
        self.uploadProtocol = uploadProtocol
        self.uploadURL = uploadURL
        self.fileURL = fileURL
        self.file = file
        self.acknowledgedOffset = acknowledgedOffset
        self.sentOffset = sentOffset
        self.checksumAlgorithm = checksumAlgorithm
        self.expires = expires
    }
}
