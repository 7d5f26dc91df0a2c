import Foundation
import HTTPTypes
import HTTPTypesFoundation

extension HTTPRequestOperation {
    /// The final response as swift-http-types' `HTTPResponse`: its status and its header
    /// fields as received, in order, a repeated field (two `Set-Cookie`) kept apart rather
    /// than joined as `HTTPURLResponse` joins them. Nil until a head arrived, and for answers
    /// without one (`file:`).
    public var httpResponse: HTTPResponse? {
        if let head = finalResponseHead { return head.httpResponse }
        // A response the operation made itself (a download a 416 found complete) has no
        // head of its own.
        return response?.httpResponse
    }
}

extension HTTPRequestOperation {
    /// ``URLConnectionOperation/responseTrailerFields`` as swift-http-types' `HTTPFields`: the
    /// trailer fields after the final response's body; empty when there were none.
    public var responseTrailers: HTTPFields {
        receivedTrailers?.httpFields ?? HTTPFields()
    }
}

extension ResponseHead {
    /// This head as an `HTTPResponse`.
    var httpResponse: HTTPResponse {
        HTTPResponse(status: HTTPResponse.Status(code: statusCode), headerFields: httpFields)
    }
}
