#include "raw_curl.h"
#include "raw_curl_common.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    CURL *easy;
    raw_body body;
    FILE *file;
} slot;

static size_t on_body_to_file(char *bytes, size_t size, size_t count, void *user) {
    slot *s = user;
    size_t n = fwrite(bytes, size, count, s->file) * size;
    s->body.length += n;
    return n;
}

static size_t on_body(char *bytes, size_t size, size_t count, void *user) {
    return raw_body_append(&((slot *)user)->body, bytes, size * count);
}

/// Each transfer gets a fresh body buffer, and the finished one is handed off (freed), as
/// any client's user receives a new body per response; or, with `reuse`, the slot keeps its
/// buffer and its capacity for the next body (already mapped, no page faults): the limit for
/// bodies in memory, which no client that hands out its bodies can reach.
static void start(CURLM *multi, slot *s, const char *url, const char *path, int reuse) {
    if (path) {
        if (s->file) fclose(s->file);
        s->file = fopen(path, "wb");
    }
    if (!reuse) raw_body_release(&s->body);
    s->body.length = 0;
    curl_easy_setopt(s->easy, CURLOPT_URL, url);
    curl_multi_add_handle(multi, s->easy);
}

raw_curl_result raw_curl_run(const char *url, long count, long in_flight, const char *path, int reuse_buffer,
                             const char *ca_file, int multiplex) {
    raw_curl_result result = {0, 0, 0};
    CURLM *multi = raw_multi_new(in_flight);
    slot *slots = calloc((size_t)in_flight, sizeof(slot));
    long started = 0;
    for (long i = 0; i < in_flight; i++) {
        CURL *easy = raw_easy_new(ca_file);
        if (multiplex) curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, path ? on_body_to_file : on_body);
        curl_easy_setopt(easy, CURLOPT_WRITEDATA, &slots[i]);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, &slots[i]);
        slots[i].easy = easy;
        if (started < count) {
            start(multi, &slots[i], url, path, reuse_buffer);
            started++;
        }
    }
    int running = 1;
    while (result.completed + result.failed < count) {
        curl_multi_perform(multi, &running);
        slot *s;
        int ok;
        while ((s = raw_next_done(multi, &ok))) {
            if (ok) result.completed++; else result.failed++;
            result.body_bytes += (int64_t)s->body.length;
            if (started < count) {
                start(multi, s, url, path, reuse_buffer);
                started++;
            }
        }
        if (result.completed + result.failed < count) {
            curl_multi_poll(multi, NULL, 0, 1000, NULL);
        }
    }
    for (long i = 0; i < in_flight; i++) {
        curl_easy_cleanup(slots[i].easy);
        raw_body_release(&slots[i].body);
        if (slots[i].file) fclose(slots[i].file);
    }
    free(slots);
    curl_multi_cleanup(multi);
    return result;
}
