#include "raw_curl_common.h"

#include <stdlib.h>
#include <string.h>

size_t raw_body_append(raw_body *body, const char *bytes, size_t n) {
    if (body->length + n > body->capacity) {
        size_t capacity = body->capacity ? body->capacity : 16384;
        while (capacity < body->length + n) capacity *= 2;
        char *grown = realloc(body->data, capacity);
        if (!grown) return 0;
        body->data = grown;
        body->capacity = capacity;
    }
    memcpy(body->data + body->length, bytes, n);
    body->length += n;
    return n;
}

void raw_body_release(raw_body *body) {
    free(body->data);
    body->data = NULL;
    body->length = 0;
    body->capacity = 0;
}

CURLM *raw_multi_new(long in_flight) {
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, in_flight * 4 > 16 ? in_flight * 4 : 16L);
    return multi;
}

CURL *raw_easy_new(const char *ca_file) {
    CURL *easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    if (ca_file) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file);
    return easy;
}

void *raw_next_done(CURLM *multi, int *ok) {
    int queued;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &queued))) {
        if (message->msg != CURLMSG_DONE) continue;
        CURL *easy = message->easy_handle;
        CURLcode code = message->data.result;
        void *private_data = NULL;
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&private_data);
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(multi, easy);
        *ok = code == CURLE_OK && status == 200;
        return private_data;
    }
    return NULL;
}
