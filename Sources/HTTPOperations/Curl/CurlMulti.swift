import CCurl
import CoreFoundation
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The curl multi handle, driven by the network thread's run loop.
///
/// - Sockets: curl tells us which sockets to watch through `CURLMOPT_SOCKETFUNCTION`; we keep
///   them in one epoll set. The epoll descriptor itself is the "port" of a version-1 run-loop
///   source, so the run loop sleeps in its own `epoll_wait` and wakes as soon as any curl
///   socket is ready. The source then drains our epoll set without blocking and tells curl
///   which sockets are ready.
/// - Edges: CoreFoundation registers every port edge-triggered (`EPOLLIN|EPOLLET`, seen with
///   strace on this toolchain), so it wakes us when a socket *becomes* ready, not while it
///   *stays* ready. curl reads one buffer per call and may leave bytes in a socket; if the
///   peer then waits for us (its send buffer full), no new edge ever comes. So we keep
///   servicing while our level-triggered set still reports ready sockets, and after a few
///   passes hand the rest to a version-0 "continue" source, which the run loop runs on its
///   next turn after timers and the inbox had theirs.
/// - Time: curl asks for one timeout at a time through `CURLMOPT_TIMERFUNCTION`. We keep one
///   run-loop timer for the whole life of the thread and move its fire date; it is never
///   re-armed by us after firing (curl re-arms it, or deletes it with -1). A timeout of 0
///   ("now", asked for by every new transfer) signals a version-0 source instead, and so
///   does our own "run soon" after unpausing, which leaves curl's date as it was.
/// - Timer syscalls: curl calls the timer callback on nearly every action, and moving a CF
///   timer is a `timerfd_settime`, a system call (Docs/Performance.md, "Fixed so far"). So the
///   timer only ever moves *earlier* when curl asks; a later or deleted timeout is remembered,
///   and if the timer then fires before it, it moves once to curl's latest date without
///   calling curl. The dates and these decisions are ``CurlTimerSchedule``, a value.
///
/// There is no polling loop, no sleep and no helper thread. Confined to the network thread.
final class CurlMulti {
    /// curl's multi handle (internal for `CurlMulti+Completion.swift`, as are the members
    /// below marked so; network thread only).
    let handle: UnsafeMutableRawPointer
    private let epollFD: Int32
    private var timer: CFRunLoopTimer?
    /// When the timer fires and when curl asked to be called (see ``CurlTimerSchedule``).
    private var schedule = CurlTimerSchedule(never: CurlMulti.never)
    private var socketSource: CFRunLoopSource?
    private var continueSource: CFRunLoopSource?
    /// Runs curl's timeouts on the next pass of the run loop, for curl's "time out now".
    private var dueNowSource: CFRunLoopSource?
    /// Passes over ready sockets before yielding the thread to other run-loop work.
    private static let passesPerTurn = 4
    /// Transfers curl is working on, keyed by their easy handle. Holding them here keeps them
    /// alive while curl holds a pointer to them.
    var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Easy handles between transfers.
    private let easyHandles = EasyHandlePool()
    /// Verified certification paths already parsed, for the pin check every pinned transfer
    /// runs on this thread.
    let verifiedPaths = VerifiedPathCache()
    /// The https origins whose requests need not wait for a multiplexing connection.
    var http1Origins = HTTP1Origins()

    /// Whether a request to `url` would wait for a multiplexing connection now. Network thread.
    func waitsForMultiplexingForTesting(_ url: URL) -> Bool {
        http1Origins.shouldWaitForMultiplexing(HTTP1Origins.Origin(url, route: .default))
    }
    private var readyEvents = [epoll_event](repeating: epoll_event(), count: 256)
    /// Sockets curl stopped watching that stay in our epoll set with their last events (see
    /// ``watch(socket:what:registered:)``).
    private var dormant = Set<curl_socket_t>()
    /// The connection cache size we gave curl: it only grows (see ``keepConnectionsFor(_:)``),
    /// up to ``limits``' total when there is one.
    private var connectionCacheSize = 0
    /// The caps in force (see ``ConnectionLimits``).
    private var limits = ConnectionLimits.unlimited
    /// The most transfers seen at once, which sized the connection cache.
    private var mostTransfers = 0
    /// True while we are inside a curl_multi call; curl forbids adding or removing handles then.
    private var insideCurl = false
    /// Transfers whose response is complete while their request body is still open, to end
    /// once out of curl (see `CurlTransfer+ResponseEnd.swift`).
    var endedFirst: [CurlTransfer] = []

    /// A date far enough away to mean "never" without overflowing CF's arithmetic.
    private static let never: CFAbsoluteTime = CFAbsoluteTimeGetCurrent() + 1e9

    /// Batches the callbacks of the transfers completed in one pass.
    let callbacks: CallbackHandoff

    init(runLoop: CFRunLoop, callbacks: CallbackHandoff) {
        self.callbacks = callbacks
        Libcurl.initialize()
        handle = curl_multi_init()
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epollFD >= 0, "epoll_create1 failed: \(String(cString: strerror(errno)))")

        let me = Unmanaged.passUnretained(self).toOpaque()
        ccurl_multi_setopt_socket_callback(handle) { _, socket, what, userData, socketData in
            let multi = Unmanaged<CurlMulti>.fromOpaque(userData!).takeUnretainedValue()
            multi.watch(socket: socket, what: what, registered: socketData != nil)
            return 0
        }
        ccurl_multi_setopt_pointer(handle, CURLMOPT_SOCKETDATA, me)
        ccurl_multi_setopt_timer_callback(handle) { _, timeoutMS, userData in
            let multi = Unmanaged<CurlMulti>.fromOpaque(userData!).takeUnretainedValue()
            multi.armTimer(milliseconds: timeoutMS)
            return 0
        }
        ccurl_multi_setopt_pointer(handle, CURLMOPT_TIMERDATA, me)
        // Multiplex HTTP/2 streams over one connection when the server offers it.
        ccurl_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        apply(ConnectionLimits.current)

        installTimer(on: runLoop)
        installSocketSource(on: runLoop)
    }

    /// Sets curl's caps on open connections (see ``ConnectionLimits``).
    func apply(_ limits: ConnectionLimits) {
        self.limits = limits
        ccurl_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, limits.perHost)
        ccurl_multi_setopt_long(handle, CURLMOPT_MAX_TOTAL_CONNECTIONS, limits.total)
        keepConnectionsFor(active.count)
    }

    /// Whether curl is working on no transfer.
    var isIdle: Bool { active.isEmpty }

    /// Closes the connections curl keeps, frees the multi handle and every pooled easy handle,
    /// and takes the timer and sources off the run loop, so that the thread can end. Only when
    /// ``isIdle``; the multi handle is not used again.
    func close() {
        precondition(active.isEmpty && !insideCurl, "the multi handle is closed only when no transfer runs")
        // curl closes its cached connections here, telling the socket callback to stop
        // watching each one: the epoll set is still open for that.
        curl_multi_cleanup(handle)
        easyHandles.removeAll()
        if let timer { CFRunLoopTimerInvalidate(timer) }
        for source in [socketSource, continueSource, dueNowSource].compactMap({ $0 }) {
            CFRunLoopSourceInvalidate(source)
        }
        timer = nil
        socketSource = nil
        continueSource = nil
        dueNowSource = nil
        Glibc.close(epollFD)
    }

    /// Starts `transfer` on a pooled easy handle. Its delegate hears every event from now
    /// until it completes.
    func add(_ transfer: CurlTransfer) {
        precondition(!insideCurl, "curl forbids adding a handle from inside its callbacks")
        let (easy, primed) = easyHandles.take(primedFor: transfer.isPlain ? transfer.request.securityPolicy : nil)
        transfer.origin = HTTP1Origins.Origin(transfer.request.url, route: transfer.request.route)
        transfer.attach(to: easy, primed: primed, waitsForMultiplexing: http1Origins.shouldWaitForMultiplexing(transfer.origin))
        if transfer.watchesResponseEnd {
            transfer.onResponseEndedFirst = { [unowned self] in self.endedFirst.append($0) }
        }
        active[easy] = transfer
        keepConnectionsFor(active.count)
        let code = curl_multi_add_handle(handle, easy)
        if code != CURLM_OK {
            active[easy] = nil
            transfer.complete(with: CURLE_FAILED_INIT, message: String(cString: curl_multi_strerror(code)))
            recycleHandle(of: transfer)
        }
    }

    /// Stops `transfer` without completing it: its delegate hears nothing more.
    func remove(_ transfer: CurlTransfer) {
        precondition(!insideCurl, "curl forbids removing a handle from inside its callbacks")
        guard let easy = transfer.easy, active.removeValue(forKey: easy) != nil else { return }
        if !endedFirst.isEmpty { endedFirst.removeAll { $0 === transfer } }
        curl_multi_remove_handle(handle, easy)
        recycleHandle(of: transfer)
    }

    /// Lets curl go on with `transfer` after a callback paused it: its delegate answered
    /// `.later` for a body chunk (the writer was full), or its body reader had nothing ready.
    /// curl may hand over the bytes it kept before this returns.
    func unpause(_ transfer: CurlTransfer) {
        precondition(!insideCurl, "curl forbids unpausing from inside its callbacks")
        guard let easy = transfer.easy, active[easy] === transfer else { return }
        // curl hands over what it held before curl_easy_pause returns, or is paused again.
        transfer.holdsReceivedBody = false
        insideCurl = true
        let code = curl_easy_pause(easy, ccurl_pause_cont)
        insideCurl = false
        // Handing over what curl held can fail (a content decoder's error): then the response
        // did not end well, and a transfer waiting to be ended after it ends with that error.
        // Otherwise the pass asked for below ends it, unless curl completes it in that pass.
        if code != CURLE_OK, endedFirst.contains(where: { $0 === transfer }) {
            endedFirst.removeAll { $0 === transfer }
            callbacks.collect { end(transfer, easy: easy, with: code) }
        }
        // curl_easy_pause does not call the timer callback on this libcurl: ask for a pass now,
        // so curl reads the socket it stopped watching.
        perform(schedule.runSoon())
    }

    /// Keeps room in curl's connection cache for four connections per transfer at the most
    /// transfers seen at once. curl's own default is four per handle *currently* added, so a
    /// moment with few transfers in (between one finishing and the next arriving from its
    /// operation) shrank the cache and closed warm connections: 306 connects for 20,000 small
    /// GETs at 16 in flight, against 16 for raw libcurl, which re-adds at once.
    ///
    /// With a total limit the cache holds no more than the limit: curl 7.88 makes room for a
    /// new connection beyond `CURLMOPT_MAX_TOTAL_CONNECTIONS` by closing an idle one, so
    /// with more idle connections than the limit in its cache, as many transfers ran at once
    /// as there were idle connections to close (four at a limit of one, in
    /// `aTotalLimitCapsTheConnections`). A cache no larger than the limit closes the extra
    /// idle connections as transfers finish.
    private func keepConnectionsFor(_ transfers: Int) {
        mostTransfers = max(mostTransfers, transfers)
        var wanted = max(Self.minimumConnectionCache, mostTransfers * 4)
        if limits.total > 0 { wanted = min(wanted, limits.total) }
        guard wanted != connectionCacheSize else { return }
        connectionCacheSize = wanted
        ccurl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, wanted)
    }

    /// The connection cache size given to curl, for tests.
    var connectionCacheSizeForTesting: Int { connectionCacheSize }

    /// The connection cache size before any transfer asks for more.
    private static let minimumConnectionCache = 16

    func recycleHandle(of transfer: CurlTransfer) {
        guard let easy = transfer.detach() else { return }
        // A transfer ended after its response, its request body open, was taken off curl
        // mid-send: its handle is not trusted with the next one.
        if transfer.sendsTrailers || transfer.refusedRewind || transfer.refusedResend || transfer.endedAfterResponse {
            curl_easy_cleanup(easy)
        } else {
            easyHandles.recycle(easy, primedFor: transfer.isPlain && !transfer.pausedReceiving ? transfer.request.securityPolicy : nil)
        }
    }

    // MARK: - Sockets

    private func installSocketSource(on runLoop: CFRunLoop) {
        var context = CFRunLoopSourceContext1()
        context.version = 1
        context.info = Unmanaged.passUnretained(self).toOpaque()
        context.getPort = { info in
            Unmanaged<CurlMulti>.fromOpaque(info!).takeUnretainedValue().epollFD
        }
        context.perform = { info in
            Unmanaged<CurlMulti>.fromOpaque(info!).takeUnretainedValue().serviceReadySockets()
        }
        let source = withUnsafeMutablePointer(to: &context) { pointer in
            pointer.withMemoryRebound(to: CFRunLoopSourceContext.self, capacity: 1) {
                CFRunLoopSourceCreate(kCFAllocatorDefault, 0, $0)
            }
        }
        CFRunLoopAddSource(runLoop, source, kCFRunLoopDefaultMode)
        socketSource = source

        continueSource = addSignalledSource(to: runLoop) { info in
            Unmanaged<CurlMulti>.fromOpaque(info!).takeUnretainedValue().serviceReadySockets()
        }
    }

    /// Adds a version-0 source whose `perform` gets this multi handle as its `info`. Signalled
    /// from the network thread inside a run-loop callout, it runs on the loop's next pass
    /// without a wake-up or a system call.
    private func addSignalledSource(to runLoop: CFRunLoop,
                                    perform: @escaping @convention(c) (UnsafeMutableRawPointer?) -> Void) -> CFRunLoopSource {
        var context = CFRunLoopSourceContext()
        context.info = Unmanaged.passUnretained(self).toOpaque()
        context.perform = perform
        let source = CFRunLoopSourceCreate(kCFAllocatorDefault, 0, &context)!
        CFRunLoopAddSource(runLoop, source, kCFRunLoopDefaultMode)
        return source
    }

    /// curl's socket callback: keep our epoll set in step with what curl wants to hear about.
    ///
    /// A finished transfer's connection goes back to curl's cache, and curl stops watching
    /// its socket; the next transfer on it starts watching again. Rather than a DEL and an
    /// ADD per request, such a socket stays in the epoll set, *dormant*, and the next watch
    /// is one MOD. A dormant socket that turns ready (the server closed the idle connection)
    /// leaves the set then, unseen by curl. A socket curl closed while dormant has left the
    /// kernel's set by itself; its number may come back for a new socket, which the MOD
    /// then misses (ENOENT) and an ADD registers.
    private func watch(socket: curl_socket_t, what: Int32, registered: Bool) {
        if what == CURL_POLL_REMOVE {
            dormant.insert(socket)
            return
        }
        var event = epoll_event()
        if what & CURL_POLL_IN != 0 { event.events |= EPOLLIN.rawValue }
        if what & CURL_POLL_OUT != 0 { event.events |= EPOLLOUT.rawValue }
        event.data.fd = socket
        if registered {
            _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, socket, &event)
            return
        }
        let wasDormant = dormant.remove(socket) != nil
        if !wasDormant || epoll_ctl(epollFD, EPOLL_CTL_MOD, socket, &event) != 0 {
            if epoll_ctl(epollFD, EPOLL_CTL_ADD, socket, &event) != 0, errno == EEXIST {
                _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, socket, &event)
            }
        }
        // Any non-nil pointer marks the socket as watched for curl.
        curl_multi_assign(handle, socket, UnsafeMutableRawPointer(bitPattern: 1))
    }

    /// Takes a dormant socket that turned ready out of the epoll set; true if it was one.
    private func retireIfDormant(_ socket: curl_socket_t) -> Bool {
        guard !dormant.isEmpty, dormant.remove(socket) != nil else { return false }
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, socket, nil)
        return true
    }

    /// The epoll source fired (or the continue source did): tell curl about every ready
    /// socket, without waiting, until none is ready or this turn's passes are used up.
    private func serviceReadySockets() {
        for _ in 0..<Self.passesPerTurn {
            if servicePass() == 0 {
                deliverCompletions()
                return
            }
        }
        deliverCompletions()
        // Still ready after our passes: come back on the run loop's next turn.
        CFRunLoopSourceSignal(continueSource)
    }

    /// One `epoll_wait` with a zero timeout; returns how many sockets were ready.
    private func servicePass() -> Int {
        let count = readyEvents.withUnsafeMutableBufferPointer { buffer in
            epoll_wait(epollFD, buffer.baseAddress, Int32(buffer.count), 0)
        }
        guard count > 0 else { return 0 }
        var running: Int32 = 0
        for index in 0..<Int(count) {
            let event = readyEvents[index]
            if retireIfDormant(event.data.fd) { continue }
            var flags: Int32 = 0
            if event.events & EPOLLIN.rawValue != 0 { flags |= CURL_CSELECT_IN }
            if event.events & EPOLLOUT.rawValue != 0 { flags |= CURL_CSELECT_OUT }
            if event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { flags |= CURL_CSELECT_ERR }
            insideCurl = true
            curl_multi_socket_action(handle, event.data.fd, flags, &running)
            insideCurl = false
        }
        return Int(count)
    }

    // MARK: - Time

    private func installTimer(on runLoop: CFRunLoop) {
        var context = CFRunLoopTimerContext()
        context.info = Unmanaged.passUnretained(self).toOpaque()
        // A repeating timer with an interval of decades: CF invalidates one-shot timers after
        // they fire, and we want to move this one's fire date for the life of the thread.
        let timer = CFRunLoopTimerCreate(kCFAllocatorDefault, Self.never, 1e9, 0, 0, { _, info in
            Unmanaged<CurlMulti>.fromOpaque(info!).takeUnretainedValue().timerFired()
        }, &context)
        CFRunLoopAddTimer(runLoop, timer, kCFRunLoopDefaultMode)
        self.timer = timer

        dueNowSource = addSignalledSource(to: runLoop) { info in
            Unmanaged<CurlMulti>.fromOpaque(info!).takeUnretainedValue().runDueTimers()
        }
    }

    /// curl's timer callback: -1 deletes the timeout, 0 means "as soon as possible".
    private func armTimer(milliseconds: Int) {
        perform(schedule.curlAsked(milliseconds: milliseconds, now: CFAbsoluteTimeGetCurrent()))
    }

    /// The run-loop timer fired: call curl if its timeout is due, else move to its date.
    private func timerFired() {
        perform(schedule.timerFired(now: CFAbsoluteTimeGetCurrent()))
    }

    /// Does what the schedule decided.
    private func perform(_ action: CurlTimerSchedule.Action) {
        switch action {
        case .none:
            break
        case .runSoon:
            // A signalled version-0 source runs on this run loop's next pass with no system
            // call; moving the timer costs a timerfd_settime.
            CFRunLoopSourceSignal(dueNowSource)
        case .moveTimer(let date):
            CFRunLoopTimerSetNextFireDate(timer, date)
        case .runDueTimers:
            runDueTimers()
        }
    }

    /// Lets curl run whatever timeouts are due; curl re-arms the timer through its callback.
    private func runDueTimers() {
        var running: Int32 = 0
        insideCurl = true
        curl_multi_socket_action(handle, ccurl_socket_timeout, 0, &running)
        insideCurl = false
        deliverCompletions()
    }
}
