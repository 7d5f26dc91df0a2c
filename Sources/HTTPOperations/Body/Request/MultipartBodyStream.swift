import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The body of a ``MultipartFormData``, streamed: boundaries and part headers from memory,
/// files read with `read(2)` straight into curl's buffer as it asks for bytes. Its length is
/// known before the first byte, and it rewinds (unless it has a stream part that was read).
///
/// Used by one transfer at a time, on the network thread.
final class MultipartBodyStream: InputStream, RewindableBodyStream {

    private enum Segment {
        case bytes(Data)
        case file(URL)
        case stream(InputStream)
    }

    private let segments: [(segment: Segment, length: Int64)]
    /// The exact length of the body.
    let contentLength: Int64
    let maximumSendRate: Int64?

    private var index = 0
    private var offset: Int64 = 0
    private var descriptor: Int32 = -1
    private var status: Stream.Status = .notOpen
    private var failure: (any Error)?
    private var streamPartsRead = false

    init(_ form: MultipartFormData) {
        var segments: [(Segment, Int64)] = []
        func text(_ string: String) {
            let data = Data(string.utf8)
            segments.append((.bytes(data), Int64(data.count)))
        }
        for (position, part) in form.parts.enumerated() {
            var head = (position == 0 ? "" : "\r\n") + "--\(form.boundary)\r\n"
            for (name, value) in part.headers { head += "\(name): \(value)\r\n" }
            text(head + "\r\n")
            switch part.source {
            case .data(let data): segments.append((.bytes(data), part.length))
            case .file(let url): segments.append((.file(url), part.length))
            case .stream(let stream): segments.append((.stream(stream), part.length))
            }
        }
        text((form.parts.isEmpty ? "" : "\r\n") + "--\(form.boundary)--\r\n")
        self.segments = segments
        self.contentLength = segments.reduce(0) { $0 + $1.1 }
        self.maximumSendRate = form.throttle.map { Int64(Double($0.packetSize) / $0.delay) }
        super.init(data: Data())
    }

    deinit {
        closeFile()
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { failure }
    override var hasBytesAvailable: Bool { index < segments.count }

    override func open() {
        if status == .notOpen { status = .open }
    }

    override func close() {
        closeFile()
        status = .closed
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        var written = 0
        while written < maxLength, index < segments.count {
            let (segment, length) = segments[index]
            let wanted = Int(min(Int64(maxLength - written), length - offset))
            let count: Int
            switch segment {
            case .bytes(let data):
                let start = data.index(data.startIndex, offsetBy: Int(offset))
                data.copyBytes(to: buffer + written, from: start..<start + wanted)
                count = wanted
            case .file(let url):
                count = readFile(url, into: buffer + written, count: wanted)
            case .stream(let stream):
                streamPartsRead = true
                if stream.streamStatus == .notOpen { stream.open() }
                count = wanted == 0 ? 0 : stream.read(buffer + written, maxLength: wanted)
                if count <= 0, wanted > 0 { fail("a stream part ended before its declared length") }
            }
            guard count >= 0, failure == nil else { return -1 }
            written += count
            offset += Int64(count)
            if offset == length {
                closeFile()
                index += 1
                offset = 0
            } else if count == 0 {
                fail("a part ended before its declared length")
                return -1
            }
        }
        if index == segments.count { status = .atEnd }
        return written
    }

    func rewind() -> Bool {
        guard !streamPartsRead else { return false }
        closeFile()
        index = 0
        offset = 0
        failure = nil
        status = .open
        return true
    }

    private func readFile(_ url: URL, into buffer: UnsafeMutablePointer<UInt8>, count: Int) -> Int {
        if descriptor < 0 {
            descriptor = Glibc.open(url.path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                fail("cannot open \(url.path): \(String(cString: strerror(errno)))")
                return -1
            }
            if offset > 0, lseek(descriptor, off_t(offset), SEEK_SET) < 0 {
                fail("cannot seek in \(url.path)")
                return -1
            }
        }
        let count = Glibc.read(descriptor, buffer, count)
        if count < 0 { fail("cannot read \(url.path): \(String(cString: strerror(errno)))") }
        return count
    }

    private func closeFile() {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
    }

    private func fail(_ reason: String) {
        failure = URLError(.requestBodyStreamExhausted, userInfo: [NSLocalizedDescriptionKey: "Multipart body: \(reason)."])
        status = .error
    }
}
