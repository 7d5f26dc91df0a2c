#include "raw_curl.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    CURL *easy;
    char *data;
    size_t length;
    size_t capacity;
    FILE *file;
} slot;

static size_t on_body_to_file(char *bytes, size_t size, size_t count, void *user) {
    slot *s = user;
    size_t n = fwrite(bytes, size, count, s->file) * size;
    s->length += n;
    return n;
}

static size_t on_body(char *bytes, size_t size, size_t count, void *user) {
    slot *s = user;
    size_t n = size * count;
    if (s->length + n > s->capacity) {
        size_t capacity = s->capacity ? s->capacity : 16384;
        while (capacity < s->length + n) capacity *= 2;
        char *grown = realloc(s->data, capacity);
        if (!grown) return 0;
        s->data = grown;
        s->capacity = capacity;
    }
    memcpy(s->data + s->length, bytes, n);
    s->length += n;
    return n;
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
    if (!reuse) {
        free(s->data);
        s->data = NULL;
        s->capacity = 0;
    }
    s->length = 0;
    curl_easy_setopt(s->easy, CURLOPT_URL, url);
    curl_multi_add_handle(multi, s->easy);
}

raw_curl_result raw_curl_run(const char *url, long count, long in_flight, const char *path, int reuse_buffer,
                             const char *ca_file, int multiplex) {
    raw_curl_result result = {0, 0, 0};
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    // The connection cache sized as HTTPOperations sizes it (four per transfer at once, at
    // least 16). curl's default follows the handles added at the moment, and between a removal
    // and the re-add below it closed warm TLS connections (Docs/Performance.md).
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, in_flight * 4 > 16 ? in_flight * 4 : 16L);
    slot *slots = calloc((size_t)in_flight, sizeof(slot));
    long started = 0;
    for (long i = 0; i < in_flight; i++) {
        CURL *easy = curl_easy_init();
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
        if (ca_file) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file);
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
        int queued;
        CURLMsg *message;
        while ((message = curl_multi_info_read(multi, &queued))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            CURLcode code = message->data.result;
            slot *s;
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&s);
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            curl_multi_remove_handle(multi, easy);
            if (code == CURLE_OK && status == 200) result.completed++; else result.failed++;
            result.body_bytes += (int64_t)s->length;
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
        free(slots[i].data);
        if (slots[i].file) fclose(slots[i].file);
    }
    free(slots);
    curl_multi_cleanup(multi);
    return result;
}
