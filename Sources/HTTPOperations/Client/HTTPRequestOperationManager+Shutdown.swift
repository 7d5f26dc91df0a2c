import Foundation

/// What ``HTTPRequestOperationManager/shutdown(gracePeriod:pauseDownloads:stoppingNetworkThread:)`` did with the
/// manager's operations.
public struct ShutdownReport: Sendable, Equatable {
    /// Operations that were running and finished on their own within the grace period.
    public var completed = 0
    /// Downloads to files that were paused, with the resume data saved beside each file (read
    /// by ``HTTPRequestOperation/download(_:to:)`` in the next process). Their operations
    /// then finish cancelled.
    public var pausedDownloads: [ResumeData] = []
    /// Operations cancelled: those not started yet, and those still running when the grace
    /// period ended.
    public var cancelled = 0
    /// Whether the process's network thread was stopped (asked with `stoppingNetworkThread`).
    public var networkThreadStopped = false

    /// Creates an empty report.
    public init() {}
}

extension HTTPRequestOperationManager {
    /// Shuts the manager down, the server way (AFNetworking's background-task hook, for a
    /// process that is told to stop): from now on it refuses new operations (see
    /// ``enqueue(_:)``); operations not started yet are cancelled; downloads to files are
    /// paused and their resume data saved (when `pauseDownloads`); every other running
    /// request, and a batch's completion (which runs once its operations ended), gets
    /// `gracePeriod` to finish, and is cancelled after it. Returns once every operation of the
    /// manager has finished.
    ///
    /// The network thread is shared by every manager of the process. Unless asked, it keeps
    /// running: it holds no transfer of this manager afterwards, and costs nothing while idle.
    ///
    /// - Parameters:
    ///   - gracePeriod: How long running requests may take to finish.
    ///   - pauseDownloads: Pause downloads to a ``URLConnectionOperation/destinationURL``
    ///     instead of letting them run, so that they continue later from their resume data.
    ///     When false they are treated as any other request.
    ///   - stoppingNetworkThread: Then stop the process's network thread: curl closes the
    ///     connections it keeps and frees its handles, and the thread ends. For a process that
    ///     is about to exit: from then on every operation of the process fails at start with
    ///     ``TransferError`` `.networkThreadStopped`. It stops only when no transfer of any
    ///     manager is under way (see ``ShutdownReport/networkThreadStopped``).
    /// - Returns: What became of the operations; an empty report when the manager was already
    ///   shut down (the network thread is still stopped when asked).
    public func shutdown(gracePeriod: Duration = .seconds(30), pauseDownloads: Bool = true,
                         stoppingNetworkThread: Bool = false) async -> ShutdownReport {
        var report = ShutdownReport()
        guard beginShutdown() else {
            if stoppingNetworkThread { report.networkThreadStopped = await NetworkThread.shared.stop() }
            return report
        }
        var downloads: [URLConnectionOperation] = []
        var running: [Operation] = []
        var cancelledAtOnce: [Operation] = []
        for operation in managedQueue.allOperations where !operation.isFinished {
            let connection = operation as? URLConnectionOperation
            let started = operation.isExecuting || connection?.isPaused == true
            if pauseDownloads, started, let connection, connection.destinationURL != nil {
                downloads.append(connection)
            } else if started || operation.name == Self.batchCompletionName {
                // A batch's completion is waited for as a running request is: its operations
                // end within the shutdown, and a caller waits on it.
                running.append(operation)
            } else {
                cancelledAtOnce.append(operation)
            }
        }
        // Through the queue: one held back for its dependencies must reach Foundation's queue
        // to finish, since a dependency outside the manager may never run.
        managedQueue.cancel(cancelledAtOnce)
        report.cancelled = cancelledAtOnce.count

        for download in downloads {
            // Runs once, after the resume data is on disk, or at once when nothing was paused.
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in download.pause { done.resume() } }
            if download.isPaused, let resumeData = download.resumeData {
                report.pausedDownloads.append(resumeData)
                // Cancelling a paused download keeps its file and resume data.
                download.cancel()
            } else {
                // It finished while being paused.
                running.append(download)
            }
        }

        let finishedInTime = await Self.waitUntilFinished(running, before: gracePeriod)
        report.completed = finishedInTime.count
        report.cancelled += running.count - finishedInTime.count
        // Every operation the manager held is finished, the cancelled ones included.
        await Self.waitUntilFinished(cancelledAtOnce + downloads)
        if stoppingNetworkThread { report.networkThreadStopped = await NetworkThread.shared.stop() }
        return report
    }

    /// Waits until every operation in `operations` has finished, cancelling those still
    /// running after `gracePeriod` (and then waiting for them too). A grace period too long
    /// to ever pass (see ``Swift/Duration/dispatchDelay``: past about 292 years, such as
    /// `.seconds(Int64.max)`) is no limit.
    ///
    /// - Returns: The operations that finished before the grace period ended.
    private static func waitUntilFinished(_ operations: [Operation], before gracePeriod: Duration) async -> [Operation] {
        guard !operations.isEmpty else { return [] }
        guard gracePeriod.dispatchDelay != nil else {
            // Not slept: Task.sleep traps when the clock's now plus the period overflows, as
            // for `.seconds(Int64.max)`, the usual way to say "no limit".
            await waitUntilFinished(operations)
            return operations
        }
        return await withTaskGroup(of: Bool.self) { group -> [Operation] in
            group.addTask {
                await waitUntilFinished(operations)
                return true
            }
            group.addTask {
                do {
                    try await Task.sleep(for: gracePeriod)
                    return false
                } catch {
                    return true  // cancelled: everything finished first
                }
            }
            if await group.next() ?? true {
                group.cancelAll()
                return operations
            }
            // The grace period is over. The waiter returns once the cancellations took effect
            // (the group waits for it).
            let finished = operations.filter(\.isFinished)
            for operation in operations where !operation.isFinished { operation.cancel() }
            return finished
        }
    }

    /// Waits until every operation in `operations` has finished: one thread blocks in
    /// `waitUntilFinished()` on each in turn, so no thread of the shared pools (where the
    /// operations' own callbacks run) is held.
    private static func waitUntilFinished(_ operations: [Operation]) async {
        guard !operations.isEmpty else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let waiter = Thread {
                for operation in operations { operation.waitUntilFinished() }
                done.resume()
            }
            waiter.name = "httpop-shutdown"
            waiter.start()
        }
    }
}
