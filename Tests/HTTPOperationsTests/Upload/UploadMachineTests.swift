import Foundation
@testable import HTTPOperations
import Testing

extension AllTests {
    /// ``UploadMachine``'s decisions, without I/O: the order of requests, which offsets are
    /// believed, the waits, pause, cancel and completion.
    @Suite struct UploadDecisions {
        private let url = URL(string: "http://uploads.example/files/1")!

        private func machine(length: Int64 = 100, chunk: Int = 40, _ uploadProtocol: ResumableUploadProtocol = .tus,
                             _ change: (inout UploadConfiguration) -> Void = { _ in }) -> UploadMachine {
            var configuration = UploadConfiguration()
            configuration.uploadProtocol = uploadProtocol
            configuration.chunkSize = chunk
            configuration.retryDelay = .milliseconds(100)
            configuration.maximumRetryDelay = .milliseconds(350)
            configuration.jitter = 0
            change(&configuration)
            return UploadMachine(length: length, configuration: configuration)
        }

        private func discovery(_ fields: [String: String]) -> UploadMachine.Answer {
            var answer = UploadMachine.Answer.status(204)
            answer.discovery = UploadDiscovery { fields[$0] }
            return answer
        }

        @Test func tusDiscoversCreatesWithTheFirstChunkThenAppendsFromTheServersOffset() {
            var machine = machine()
            #expect(machine.start() == .request(.discover))
            let extensions = ["Tus-Version": "1.0.0", "Tus-Extension": "creation,creation-with-upload,checksum",
                              "Tus-Checksum-Algorithm": "md5,sha1"]
            #expect(machine.answered(.discover, discovery(extensions), jitter: 0) == .request(.create(count: 40)))
            #expect(machine.checksumAlgorithm == .sha1)
            #expect(machine.answered(.create(count: 40), .status(201, offset: 40, location: url), jitter: 0)
                    == .request(.append(offset: 40, count: 40)))
            #expect(machine.answered(.append(offset: 40, count: 40), .status(204, offset: 80), jitter: 0)
                    == .request(.append(offset: 80, count: 20)))
            #expect(machine.answered(.append(offset: 80, count: 20), .status(204, offset: 100), jitter: 0) == .finish(.completed))
            #expect(machine.sentBound == 100)
        }

        @Test func discoveryRefusesWhatTheUploadCannotUse() {
            var old = machine()
            _ = old.start()
            #expect(old.answered(.discover, discovery(["Tus-Version": "0.2.2", "Tus-Extension": "creation"]), jitter: 0)
                    == .finish(.failed(.unsupportedServer("Tus-Version 0.2.2 lacks 1.0.0"))))
            var small = machine()
            _ = small.start()
            #expect(small.answered(.discover, discovery(["Tus-Version": "1.0.0", "Tus-Extension": "creation", "Tus-Max-Size": "99"]),
                                   jitter: 0) == .finish(.failed(.tooLarge(length: 100, limit: 99))))
            // A server that refuses OPTIONS gets core and creation only: no data with the creation.
            var plain = machine()
            _ = plain.start()
            #expect(plain.answered(.discover, .status(405), jitter: 0) == .request(.create(count: 0)))
        }

        @Test func aDropWaitsDoublingThenAsksTheOffsetAndA409AsksAtOnce() {
            var machine = machine()
            _ = machine.start()
            _ = machine.answered(.discover, .status(405), jitter: 0)
            #expect(machine.answered(.create(count: 0), .status(201, location: url), jitter: 0) == .request(.append(offset: 0, count: 40)))
            #expect(machine.answered(.append(offset: 0, count: 40), .dropped, jitter: 0) == .wait(.milliseconds(100)))
            #expect(machine.waited() == .request(.queryOffset))
            #expect(machine.answered(.queryOffset, .dropped, jitter: 0) == .wait(.milliseconds(200)))
            #expect(machine.waited() == .request(.queryOffset))
            #expect(machine.answered(.queryOffset, .status(503), jitter: 0) == .wait(.milliseconds(350)))
            #expect(machine.waited() == .request(.queryOffset))
            #expect(machine.answered(.queryOffset, .status(200, offset: 25), jitter: 0) == .request(.append(offset: 25, count: 40)))
            // Progress reset the count; a 409 asks again without a wait.
            #expect(machine.failures == 0)
            #expect(machine.answered(.append(offset: 25, count: 40), .status(409), jitter: 0) == .request(.queryOffset))
        }

        @Test func offsetsThatCannotBeTrueAreTypedErrors() {
            func after(_ answer: UploadMachine.Answer) -> UploadMachine.Action {
                var machine = machine()
                _ = machine.start()
                _ = machine.answered(.discover, .status(405), jitter: 0)
                _ = machine.answered(.create(count: 0), .status(201, location: url), jitter: 0)
                _ = machine.answered(.append(offset: 0, count: 40), .status(204, offset: 40), jitter: 0)
                _ = machine.answered(.append(offset: 40, count: 40), .dropped, jitter: 0)
                _ = machine.waited()
                return machine.answered(.queryOffset, answer, jitter: 0)
            }
            #expect(after(.status(200, offset: 101)) == .finish(.failed(.offsetBeyondLength(reported: 101, length: 100))))
            #expect(after(.status(200, offset: 81)) == .finish(.failed(.offsetAhead(reported: 81, sent: 80))))
            #expect(after(.status(200, offset: 39)) == .finish(.failed(.offsetBehind(reported: 39, acknowledged: 40))))
            #expect(after(.status(200)) == .finish(.failed(.invalidAnswer("the offset request's answer has no valid Upload-Offset"))))
            #expect(after(.status(410)) == .finish(.failed(.uploadGone(status: 410))))
            #expect(after(.status(200, offset: 80)) == .request(.append(offset: 80, count: 20)))
        }

        @Test func anAppendThatKeepsNothingIsAFailureAndFailuresRunOut() {
            var machine = machine { $0.maximumConsecutiveFailures = 2 }
            _ = machine.start()
            _ = machine.answered(.discover, .status(405), jitter: 0)
            _ = machine.answered(.create(count: 0), .status(201, location: url), jitter: 0)
            #expect(machine.answered(.append(offset: 0, count: 40), .status(204, offset: 0), jitter: 0) == .wait(.milliseconds(100)))
            _ = machine.waited()
            #expect(machine.answered(.queryOffset, .status(500), jitter: 0) == .wait(.milliseconds(200)))
            _ = machine.waited()
            #expect(machine.answered(.queryOffset, .status(500), jitter: 0) == .finish(.retriesExhausted(attempts: 3)))
        }

        @Test func theDraftCompletesOnlyWhenTheServerSaysSo() {
            var machine = machine(length: 30, .ietfDraft)
            #expect(machine.start() == .request(.discover))
            // No Upload-Limit: the server is not known to resume, the creation carries it all.
            #expect(machine.answered(.discover, .status(405), jitter: 0) == .request(.create(count: 30)))
            machine.learnedLocation(url)
            // The creation's answer was lost after its 104: the offset is asked of the upload.
            #expect(machine.answered(.create(count: 30), .dropped, jitter: 0) == .wait(.milliseconds(100)))
            #expect(machine.waited() == .request(.queryOffset))
            // Every byte arrived but the upload is not complete: an empty append completes it.
            #expect(machine.answered(.queryOffset, .status(204, offset: 30, complete: false), jitter: 0)
                    == .request(.append(offset: 30, count: 0)))
            #expect(machine.answered(.append(offset: 30, count: 0), .status(204, offset: 30, complete: true), jitter: 0)
                    == .finish(.completed))
        }

        /// The draft: a server whose `OPTIONS` names `Upload-Limit` is known to resume, so the
        /// creation carries one chunk (never more than its `max-append-size`); one that does not
        /// gets the whole upload at once.
        @Test func theDraftsDiscoveryDecidesTheCreationsSize() {
            var known = machine(length: 100, chunk: 60, .ietfDraft)
            _ = known.start()
            var limit = UploadMachine.Answer.status(204)
            limit.discovery = UploadDiscovery { $0 == "Upload-Limit" ? "min-size=0, max-append-size=25, future-key=1" : nil }
            #expect(known.answered(.discover, limit, jitter: 0) == .request(.create(count: 25)))
            #expect(known.answered(.create(count: 25), .status(201, offset: 25, location: url), jitter: 0)
                    == .request(.append(offset: 25, count: 25)))
            var tooBig = machine(length: 100, .ietfDraft)
            _ = tooBig.start()
            limit.discovery = UploadDiscovery { $0 == "Upload-Limit" ? "max-size=99" : nil }
            #expect(tooBig.answered(.discover, limit, jitter: 0) == .finish(.failed(.tooLarge(length: 100, limit: 99))))
        }

        @Test func pauseResumeAndCancel() {
            var machine = machine()
            _ = machine.start()
            _ = machine.answered(.discover, .status(405), jitter: 0)
            _ = machine.answered(.create(count: 0), .status(201, location: url), jitter: 0)
            let paused = machine.pause()
            #expect(paused)
            #expect(machine.answered(.append(offset: 0, count: 40), .dropped, jitter: 0) == .awaitResume)
            #expect(machine.failures == 0)
            let resumed = machine.resume()
            #expect(resumed)
            #expect(machine.waited() == .request(.queryOffset))
            let cancelled = machine.cancel(), cancelledAgain = machine.cancel()
            #expect(cancelled && !cancelledAgain)
            #expect(machine.answered(.queryOffset, .dropped, jitter: 0) == .finish(.cancelled))

            var terminating = self.machine { $0.terminatesOnCancel = true }
            _ = terminating.start()
            _ = terminating.answered(.discover, .status(405), jitter: 0)
            _ = terminating.answered(.create(count: 0), .status(201, location: url), jitter: 0)
            let terminatingCancelled = terminating.cancel()
            #expect(terminatingCancelled)
            #expect(terminating.answered(.append(offset: 0, count: 40), .dropped, jitter: 0) == .request(.terminate))
            #expect(terminating.answered(.terminate, .status(204), jitter: 0) == .finish(.cancelled))
        }

        /// Draft 05 lets a successful answer to `Upload-Complete: ?1` leave the
        /// field out (its own examples do); that answer completes the upload.
        @Test func theDraftsLastAnswerWithoutUploadCompleteCompletes() {
            var machine = machine(length: 100, chunk: 60, .ietfDraft)
            _ = machine.start()
            var limit = UploadMachine.Answer.status(204)
            limit.discovery = UploadDiscovery { $0 == "Upload-Limit" ? "min-size=0" : nil }
            #expect(machine.answered(.discover, limit, jitter: 0) == .request(.create(count: 60)))
            #expect(machine.answered(.create(count: 60), .status(201, offset: 60, location: url), jitter: 0)
                    == .request(.append(offset: 60, count: 40)))
            #expect(machine.answered(.append(offset: 60, count: 40), .status(201, offset: 100), jitter: 0) == .finish(.completed))
            // An offset request must say it: without `?1` the upload is not complete.
            var asked = self.machine(length: 100, chunk: 100, .ietfDraft)
            _ = asked.start()
            #expect(asked.answered(.discover, .status(405), jitter: 0) == .request(.create(count: 100)))
            asked.learnedLocation(url)
            _ = asked.answered(.create(count: 100), .dropped, jitter: 0)
            _ = asked.waited()
            #expect(asked.answered(.queryOffset, .status(204, offset: 100), jitter: 0) == .request(.append(offset: 100, count: 0)))
            // An empty completing append answered without completion is a failure, not a loop
            // (the first in a row: the offset request before it showed progress).
            #expect(asked.answered(.append(offset: 100, count: 0), .status(204, offset: 100, complete: false), jitter: 0)
                    == .wait(.milliseconds(100)))
            #expect(asked.failures == 1)
        }

        /// A request's failure after a pause and a resume (its connection
        /// was closed by the pause) is neither a failure nor the end: the offset is asked.
        @Test func aRequestInterruptedByAPauseAndResumeAsksTheOffsetWithoutAFailure() {
            var machine = machine()
            _ = machine.start()
            _ = machine.answered(.discover, .status(405), jitter: 0)
            _ = machine.answered(.create(count: 0), .status(201, location: url), jitter: 0)
            let sent = machine.interruptions
            _ = machine.pause()
            _ = machine.resume()
            #expect(machine.answered(.append(offset: 0, count: 40), UploadMachine.Answer(failedForGood: true), jitter: 0,
                                     interruptedSince: sent) == .request(.queryOffset))
            #expect(machine.failures == 0)
            let again = machine.interruptions
            _ = machine.pause()
            _ = machine.resume()
            #expect(machine.answered(.queryOffset, .dropped, jitter: 0, interruptedSince: again) == .request(.queryOffset))
            #expect(machine.failures == 0)
        }

        /// Appends answered without an offset, whose offset request shows no
        /// progress, run out instead of alternating for ever.
        @Test func appendsAnsweredWithoutAnOffsetAndNoProgressRunOut() {
            var machine = machine { $0.maximumConsecutiveFailures = 3 }
            _ = machine.start()
            _ = machine.answered(.discover, .status(405), jitter: 0)
            _ = machine.answered(.create(count: 0), .status(201, location: url), jitter: 0)
            var action = UploadMachine.Action.request(.append(offset: 0, count: 40))
            for _ in 0..<20 {
                guard case .request(let step) = action else { break }
                action = machine.answered(step, step == .queryOffset ? .status(200, offset: 0) : .status(204), jitter: 0)
            }
            #expect(action == .finish(.retriesExhausted(attempts: 4)))
        }

        /// An `OPTIONS` answered 2xx without any tus field (a proxy's CORS
        /// answer) is no discovery; and an offset request naming another length is refused.
        @Test func aDiscoveryWithoutTusFieldsIsNoneAndAnotherLengthIsRefused() {
            var machine = machine()
            _ = machine.start()
            #expect(machine.answered(.discover, .status(200), jitter: 0) == .request(.create(count: 0)))
            _ = machine.answered(.create(count: 0), .status(201, location: url), jitter: 0)
            _ = machine.answered(.append(offset: 0, count: 40), .dropped, jitter: 0)
            _ = machine.waited()
            var answer = UploadMachine.Answer.status(200, offset: 40)
            answer.length = 99
            #expect(machine.answered(.queryOffset, answer, jitter: 0)
                    == .finish(.failed(.invalidAnswer("the server's Upload-Length is 99, not 100"))))
        }

        /// A server that does not resume (its OPTIONS answered
        /// 501, no 104, no Location) took the whole upload when it answers 2xx to the creation that
        /// said `Upload-Complete: ?1`; a 5xx or 429 to the optional OPTIONS is no discovery, not a
        /// failure to retry.
        @Test func aPlainEndpointThatTookTheWholeUploadCompletesIt() {
            var machine = machine(length: 30, .ietfDraft)
            _ = machine.start()
            #expect(machine.answered(.discover, .status(501), jitter: 0) == .request(.create(count: 30)))
            #expect(machine.answered(.create(count: 30), .status(200), jitter: 0) == .finish(.completed))
            var tus = self.machine()
            _ = tus.start()
            #expect(tus.answered(.discover, .status(503), jitter: 0) == .request(.create(count: 0)))
            // A part of the upload (`?0`) answered without a Location is still a broken answer.
            var part = self.machine(length: 100, chunk: 40, .ietfDraft)
            _ = part.start()
            var limit = UploadMachine.Answer.status(204)
            limit.discovery = UploadDiscovery { $0 == "Upload-Limit" ? "min-size=0" : nil }
            _ = part.answered(.discover, limit, jitter: 0)
            #expect(part.answered(.create(count: 40), .status(201), jitter: 0)
                    == .finish(.failed(.invalidAnswer("the creation's answer has no Location"))))
        }

        @Test func resumeDataAsksTheOffsetBeforeAnyByte() {
            var configuration = UploadConfiguration()
            configuration.chunkSize = 40
            var machine = UploadMachine(length: 100, configuration: configuration, uploadURL: url, acknowledged: 40, sentBound: 80,
                                        checksumAlgorithm: nil)
            #expect(machine.start() == .request(.queryOffset))
            #expect(machine.answered(.queryOffset, .status(200, offset: 80), jitter: 0) == .request(.append(offset: 80, count: 20)))
        }
    }
}
