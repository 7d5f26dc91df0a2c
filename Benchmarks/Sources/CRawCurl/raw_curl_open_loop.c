#include "raw_curl.h"
#include "raw_curl_common.h"

#include <stdlib.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/// One request of the schedule, in flight: its easy handle, its body, and its index.
typedef struct {
    CURL *easy;
    raw_body body;
    long index;
} request_slot;

static size_t on_open_loop_body(char *bytes, size_t size, size_t count, void *user) {
    return raw_body_append(&((request_slot *)user)->body, bytes, size * count);
}

static double monotonic_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static request_slot *new_slot(const char *url, const char *ca_file) {
    request_slot *s = calloc(1, sizeof(request_slot));
    CURL *easy = raw_easy_new(ca_file);
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_open_loop_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, s);
    s->easy = easy;
    return s;
}

raw_curl_result raw_curl_open_loop(const char *url, long count, double rate, const char *ca_file,
                                   long max_in_flight, double *latencies) {
    raw_curl_result result = {0, 0, 0};
    CURLM *multi = raw_multi_new(max_in_flight);
    // At most `max_in_flight` transfers are in curl at once, each on its own pooled handle;
    // requests due beyond them wait in this loop's queue, which is simply the indices from
    // `started` to the last one due (requests start in the order they fall due), as the Swift
    // clients' places do (OpenLoop.swift). Handing curl every due request instead makes each
    // curl_multi_perform walk them all: a loop that fell behind never caught up.
    request_slot **idle = calloc((size_t)max_in_flight, sizeof(request_slot *));
    long idle_count = 0, created = 0, started = 0;
    for (long i = 0; i < count; i++) latencies[i] = -1;
    // Wakes curl_multi_poll when the next request falls due, to the nanosecond: its own
    // timeout is in whole milliseconds, which would either spin (rounded down) or start
    // requests late (rounded up); the Swift clients sleep with clock_nanosleep.
    int due_timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    const double start = monotonic_seconds() + 0.01;
    while (result.completed + result.failed < count) {
        // Every request due by now is queued, however many are still out: the schedule does
        // not wait for the client (no coordinated omission), and the wait counts.
        double now = monotonic_seconds();
        while (started < count && start + (double)started / rate <= now && (idle_count > 0 || created < max_in_flight)) {
            request_slot *s;
            if (idle_count > 0) {
                s = idle[--idle_count];
            } else {
                s = new_slot(url, ca_file);
                created++;
            }
            s->index = started++;
            raw_body_release(&s->body);
            curl_multi_add_handle(multi, s->easy);
        }
        int running;
        curl_multi_perform(multi, &running);
        request_slot *s;
        int ok;
        while ((s = raw_next_done(multi, &ok))) {
            if (ok) {
                result.completed++;
                result.body_bytes += (int64_t)s->body.length;
                latencies[s->index] = monotonic_seconds() - (start + (double)s->index / rate);
            } else {
                result.failed++;
            }
            idle[idle_count++] = s;
        }
        if (result.completed + result.failed < count) {
            // Until the next request is due (when a handle is free for it), or something
            // happens on a socket.
            struct curl_waitfd timer = {due_timer, CURL_WAIT_POLLIN, 0};
            int timers = 0;
            if (started < count && (idle_count > 0 || created < max_in_flight)) {
                double due = start + (double)started / rate;
                if (due <= monotonic_seconds()) continue;
                struct itimerspec at = {{0, 0}, {(time_t)due, (long)((due - (double)(time_t)due) * 1e9)}};
                timerfd_settime(due_timer, TFD_TIMER_ABSTIME, &at, NULL);
                timers = 1;
            }
            curl_multi_poll(multi, timers ? &timer : NULL, (unsigned)timers, 1000, NULL);
            uint64_t expirations;
            if (timers) (void)!read(due_timer, &expirations, sizeof expirations);
        }
    }
    close(due_timer);
    for (long i = 0; i < idle_count; i++) {
        curl_easy_cleanup(idle[i]->easy);
        raw_body_release(&idle[i]->body);
        free(idle[i]);
    }
    free(idle);
    curl_multi_cleanup(multi);
    return result;
}
