import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import HTTPOperations
import HTTPTestServer

/// Issue 38's "a POST at most once" inside the resume campaign: a POST sent beside a run's
/// download shares curl's kept-alive connections with the campaign's downloads, and the server
/// may close a reused one as the POST arrives (``AdversarialResumeServer/postPath(of:)``).
/// curl would send it again on a fresh connection; the library must not let it.
///
/// The oracle: the server saw the POST at most once; a success means it saw it once and the
/// body is its answer; a failure is a typed error; an outcome comes within the run's deadline.
extension CampaignScenarioExecution {
    /// A POST on its way, to judge once the run's download is judged.
    struct PendingPost {
        let post: CampaignScenario.Post
        let operation: HTTPRequestOperation
        let recorder: CampaignRunRecorder
    }

    /// Starts the run's POST on the scenario's route, with a retry policy that would resend it
    /// if the library treated a POST as idempotent.
    func startPost(_ post: CampaignScenario.Post) -> PendingPost {
        var request = URLRequest(url: servers.url(scenario, path: AdversarialResumeServer.postPath(of: post.id)),
                                 timeoutInterval: idleTimeout)
        request.httpMethod = "POST"
        request.setValue(post.closeIfReused ? "1" : "0", forHTTPHeaderField: "X-Close-If-Reused")
        let body = Data("post \(post.id)".utf8)
        if post.streamed {
            request.httpBodyStream = StreamedRequestBody(length: Int64(body.count)) { writer in try await writer.write(body) }
        } else {
            request.httpBody = body
        }
        let operation = HTTPRequestOperation(request: request)
        servers.configure(operation, for: scenario.route)
        operation.retryPolicy = RetryPolicy(maximumRetries: 2, initialDelay: 0.002, maximumDelay: 0.02)
        let recorder = CampaignRunRecorder()
        recorder.watch(operation)
        campaignPostQueue.addOperation(operation)
        return PendingPost(post: post, operation: operation, recorder: recorder)
    }

    /// Waits for the POST's outcome and checks the oracle.
    func judge(_ pending: PendingPost, run number: Int) async {
        let id = pending.post.id
        guard await pending.recorder.reported.wait(timeout: runDeadline) else {
            violation(number, "POST: no outcome", "POST \(id): no outcome within \(runDeadline)")
            pending.operation.cancel()
            return
        }
        let arrivals = servers.server.arrivals(ofPost: id)
        let error = pending.recorder.first ?? nil
        if arrivals > 1 {
            violation(number, "POST: sent more than once", "POST \(id) arrived \(arrivals) times; outcome \(error.map { "\($0)" } ?? "success")")
        } else if let error {
            if campaignOutcomeKind(error) == nil {
                violation(number, "POST: untyped error", "POST \(id): \(String(reflecting: type(of: error))): \(error)")
            } else if servers.server.answered(post: id), scenario.route != .httpThroughProxy, scenario.route != .http2ThroughNginx {
                // Nothing stands between the server's whole answer and the client on these
                // routes (the tunnel and the TLS relay pass bytes): a failure is the client's.
                violation(number, "POST: answered, reported failed", "POST \(id): the server answered it whole; the client reported \(error)")
            } else {
                count("POST: failed (arrived \(arrivals) times)")
            }
        } else if arrivals != 1 || pending.operation.responseData != Data("posted \(id)".utf8) {
            violation(number, "POST: success that is not its answer",
                      "POST \(id) arrived \(arrivals) times; body \(pending.operation.responseData.map { String(decoding: $0, as: UTF8.self) } ?? "none")")
        } else {
            count("POST: answered")
        }
        postsSent.append(id)
    }

    /// Checks once more, at the scenario's end, that no POST arrived twice: a resend still on
    /// its way when its outcome was judged has arrived by now.
    func checkPostsArrivedOnce() {
        for id in postsSent where servers.server.arrivals(ofPost: id) > 1 {
            violation(scenario.runs.count, "POST: sent more than once",
                      "POST \(id) arrived \(servers.server.arrivals(ofPost: id)) times, seen after its outcome")
        }
    }
}

/// Starts the campaign's POSTs.
private let campaignPostQueue: OperationQueue = {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 64
    return queue
}()
