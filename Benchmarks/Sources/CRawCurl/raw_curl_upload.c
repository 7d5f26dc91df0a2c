#include "raw_curl.h"
#include "raw_curl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/// One POST in flight: its handle, its file (when the body is a file) and its answer's length.
typedef struct {
    CURL *easy;
    FILE *file;
    size_t answered;
} upload_slot;

static size_t on_answer(char *bytes, size_t size, size_t count, void *user) {
    (void)bytes;
    upload_slot *s = user;
    s->answered += size * count;
    return size * count;
}

static size_t on_read(char *buffer, size_t size, size_t count, void *user) {
    upload_slot *s = user;
    return fread(buffer, 1, size * count, s->file);
}

static void start_upload(CURLM *multi, upload_slot *s, const char *file_path) {
    if (file_path) {
        if (s->file) fclose(s->file);
        s->file = fopen(file_path, "rb");
    }
    s->answered = 0;
    curl_multi_add_handle(multi, s->easy);
}

raw_curl_result raw_curl_upload(const char *url, long count, long in_flight, const char *json, const char *file_path,
                                const char *ca_file) {
    raw_curl_result result = {0, 0, 0};
    struct stat file_status;
    curl_off_t file_size = 0;
    if (file_path) {
        if (stat(file_path, &file_status) != 0) {
            result.failed = count;
            return result;
        }
        file_size = (curl_off_t)file_status.st_size;
    }
    CURLM *multi = raw_multi_new(in_flight);
    // As HTTPOperations sends them: without `Expect: 100-continue` (curl adds it to bodies over
    // 1 MiB and then waits for the server's go-ahead).
    struct curl_slist *headers = curl_slist_append(NULL, "Expect:");
    if (json) headers = curl_slist_append(headers, "Content-Type: application/json");
    upload_slot *slots = calloc((size_t)in_flight, sizeof(upload_slot));
    long started = 0;
    for (long i = 0; i < in_flight; i++) {
        CURL *easy = raw_easy_new(ca_file);
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        if (json) {
            curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json));
            curl_easy_setopt(easy, CURLOPT_POSTFIELDS, json);
        } else {
            curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, file_size);
            curl_easy_setopt(easy, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(easy, CURLOPT_READDATA, &slots[i]);
        }
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_answer);
        curl_easy_setopt(easy, CURLOPT_WRITEDATA, &slots[i]);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, &slots[i]);
        slots[i].easy = easy;
        if (started < count) {
            start_upload(multi, &slots[i], file_path);
            started++;
        }
    }
    int running;
    while (result.completed + result.failed < count) {
        curl_multi_perform(multi, &running);
        upload_slot *s;
        int ok;
        while ((s = raw_next_done(multi, &ok))) {
            if (ok) result.completed++; else result.failed++;
            result.body_bytes += (int64_t)s->answered;
            if (started < count) {
                start_upload(multi, s, file_path);
                started++;
            }
        }
        if (result.completed + result.failed < count) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    for (long i = 0; i < in_flight; i++) {
        curl_easy_cleanup(slots[i].easy);
        if (slots[i].file) fclose(slots[i].file);
    }
    free(slots);
    curl_slist_free_all(headers);
    curl_multi_cleanup(multi);
    return result;
}
