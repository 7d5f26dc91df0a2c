#ifndef RAW_CURL_COMMON_H
#define RAW_CURL_COMMON_H

// What the raw clients (raw_curl.c, raw_curl_open_loop.c, raw_curl_upload.c) share.

#include <curl/curl.h>
#include <stddef.h>

/// A body in memory, grown as its bytes arrive.
typedef struct {
    char *data;
    size_t length;
    size_t capacity;
} raw_body;

/// Appends `n` bytes, doubling the buffer as needed (16 KiB first). Returns `n`, or 0 when
/// out of memory (curl then fails the transfer).
size_t raw_body_append(raw_body *body, const char *bytes, size_t n);

/// Frees the buffer and empties the body: the next one starts fresh, as a client's user gets
/// a new body per response.
void raw_body_release(raw_body *body);

/// A multi handle that multiplexes, its connection cache sized as HTTPOperations sizes its own
/// (four per transfer at once, at least 16). curl's default follows the handles added at the
/// moment, and between a removal and the re-add the raw loops do, it closed warm TLS
/// connections (Docs/Performance.md).
CURLM *raw_multi_new(long in_flight);

/// An easy handle with the options HTTPOperations sets (NOSIGNAL, ACCEPT_ENCODING "", HTTP/2
/// over TLS, no redirects, TCP keep-alive) and, when `ca_file` is not NULL, the authorities to
/// trust (CURLOPT_CAINFO).
CURL *raw_easy_new(const char *ca_file);

/// The next transfer that finished, taken out of `multi`: its CURLOPT_PRIVATE pointer, with
/// `*ok` set to whether it ended with CURLE_OK and status 200; NULL when none has finished.
void *raw_next_done(CURLM *multi, int *ok);

#endif
