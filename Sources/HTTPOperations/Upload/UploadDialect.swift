import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How each ``UploadMachine/Step`` is said in one protocol, and how its answers are read.
///
/// - tus 1.0.0: `Tus-Resumable: 1.0.0` on every request but `OPTIONS`; creation is a `POST`
///   with `Upload-Length` and `Upload-Metadata` (values base64); appends are `PATCH`es of
///   `application/offset+octet-stream` with `Upload-Offset` (and `Upload-Checksum`).
/// - draft-ietf-httpbis-resumable-upload-05: `Upload-Draft-Interop-Version: 6` on every
///   request; creation is a `POST` with `Upload-Complete` and `Upload-Length` whose 104
///   interim answer names the upload; appends are `PATCH`es of `application/partial-upload`
///   with `Upload-Offset` and `Upload-Complete`.
struct UploadDialect: Sendable {
    /// The draft's interop version this client speaks (draft 05).
    static let ietfInteropVersion = "6"

    let uploadProtocol: ResumableUploadProtocol
    /// The creation request as the caller gave it: its URL and header fields (an
    /// `Authorization`, say) go on every request.
    let template: URLRequest
    let length: Int64
    let metadata: [String: String]

    /// The request for `step`, carrying `bytes` (the step's body, already read).
    func request(for step: UploadMachine.Step, uploadURL: URL?, bytes: Data?,
                 checksum: UploadChecksum.Algorithm?) -> URLRequest {
        var request = template
        request.httpBody = nil
        request.httpBodyStream = nil
        // Each request's framing is its own: a template's `Content-Length` (tus's own example
        // creation carries `0`), `Transfer-Encoding` or `Host` (the upload's URL may be on
        // another authority) would contradict the body or the URL, and be refused.
        Self.removeFields(["content-length", "transfer-encoding", "host"], from: &request)
        let tus = uploadProtocol == .tus
        switch step {
        case .discover:
            request.httpMethod = "OPTIONS"
        case .create(let count):
            request.httpMethod = "POST"
            if tus {
                request.setValue("\(length)", forHTTPHeaderField: "Upload-Length")
                if let encoded = encodedMetadata { request.setValue(encoded, forHTTPHeaderField: "Upload-Metadata") }
            } else {
                request.setValue(count == length ? "?1" : "?0", forHTTPHeaderField: "Upload-Complete")
                request.setValue("\(length)", forHTTPHeaderField: "Upload-Length")
            }
            if count > 0 || !tus { attach(bytes ?? Data(), to: &request, checksum: checksum, firstOfCreation: true) }
        case .queryOffset:
            request.url = uploadURL
            request.httpMethod = "HEAD"
        case .append(let offset, let count):
            request.url = uploadURL
            request.httpMethod = "PATCH"
            request.setValue("\(offset)", forHTTPHeaderField: "Upload-Offset")
            if !tus {
                request.setValue(offset + Int64(count) == length ? "?1" : "?0", forHTTPHeaderField: "Upload-Complete")
            }
            attach(bytes ?? Data(), to: &request, checksum: checksum, firstOfCreation: false)
        case .terminate:
            request.url = uploadURL
            request.httpMethod = "DELETE"
        }
        if tus {
            if step != .discover { request.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable") }
        } else {
            request.setValue(Self.ietfInteropVersion, forHTTPHeaderField: "Upload-Draft-Interop-Version")
        }
        // The server names the upload's URL: credentials given for the creation endpoint do not
        // follow it to another origin (as a redirect's would not).
        if leavesOrigin(request.url) {
            Self.removeFields(["authorization", "proxy-authorization", "cookie"], from: &request)
        }
        return request
    }


    private func attach(_ bytes: Data, to request: inout URLRequest, checksum: UploadChecksum.Algorithm?, firstOfCreation: Bool) {
        request.httpBody = bytes
        switch uploadProtocol {
        case .tus:
            request.setValue("application/offset+octet-stream", forHTTPHeaderField: "Content-Type")
            if let checksum { request.setValue(checksum.headerValue(for: bytes), forHTTPHeaderField: "Upload-Checksum") }
        case .ietfDraft:
            // The creation's body is the representation itself; an append's a part of it.
            let type = firstOfCreation ? (template.value(forHTTPHeaderField: "Content-Type") ?? "application/octet-stream")
                                       : "application/partial-upload"
            request.setValue(type, forHTTPHeaderField: "Content-Type")
        }
    }

    /// `Upload-Metadata`: `key base64(value)` pairs, sorted by key (so that one upload always
    /// says the same).
    private var encodedMetadata: String? {
        guard !metadata.isEmpty else { return nil }
        return metadata.sorted { $0.key < $1.key }
            .map { "\($0.key) \(Data($0.value.utf8).base64EncodedString())" }
            .joined(separator: ",")
    }

    /// What `step`'s answer says, read from its status and header fields (`value` looks one
    /// up by name, case-insensitively); `requestURL` resolves a relative `Location`.
    func answer(for step: UploadMachine.Step, status: Int, requestURL: URL?,
                value: (String) -> String?) -> UploadMachine.Answer {
        var answer = UploadMachine.Answer.status(status)
        answer.offset = value("Upload-Offset").flatMap(Self.offset)
        answer.length = value("Upload-Length").flatMap(Self.offset)
        if let location = value("Location"), let url = URL(string: location, relativeTo: requestURL) {
            if Self.downgrades(from: requestURL, to: url.absoluteURL) {
                answer.insecureLocation = url.absoluteURL
            } else {
                answer.location = url.absoluteURL
            }
        }
        if uploadProtocol == .ietfDraft {
            answer.complete = value("Upload-Complete").flatMap(Self.structuredBoolean)
        }
        if step == .discover { answer.discovery = UploadDiscovery(value: value) }
        return answer
    }

    /// Removes the fields whose lower-cased names are in `names`, however the caller spelled
    /// them.
    static func removeFields(_ names: Set<String>, from request: inout URLRequest) {
        for name in (request.allHTTPHeaderFields ?? [:]).keys where names.contains(name.lowercased()) {
            request.setValue(nil, forHTTPHeaderField: name)
        }
    }

    /// Whether `url` would take a request made over https to plain http (as a redirect may not,
    /// ``SecurityError`` `.insecureRedirect`).
    static func downgrades(from requestURL: URL?, to url: URL) -> Bool {
        requestURL?.scheme?.lowercased() == "https" && url.scheme?.lowercased() == "http"
    }

    /// Whether `url` is on another origin than the creation request's: the fields that speak
    /// for the caller stay behind (as a redirect's would).
    func leavesOrigin(_ url: URL?) -> Bool {
        guard let url else { return false }
        return !(template.url.map { RedirectPolicy.isSameOrigin(url, $0) } ?? false)
    }

    /// An `Upload-Offset`: a non-negative decimal integer of at most 15 digits (a structured
    /// field integer's bound, and what tus servers send); anything else is no offset.
    static func offset(_ text: String) -> Int64? {
        let digits = text.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(digits)
    }

    /// A structured field boolean: `?1` or `?0`.
    static func structuredBoolean(_ text: String) -> Bool? {
        switch text.trimmingCharacters(in: .whitespaces) {
        case "?1": true
        case "?0": false
        default: nil
        }
    }
}
