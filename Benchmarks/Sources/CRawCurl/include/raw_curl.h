#ifndef RAW_CURL_H
#define RAW_CURL_H

#include <stddef.h>
#include <stdint.h>

/// What one raw-libcurl run did.
typedef struct {
    long completed;        ///< transfers that ended with CURLE_OK and status 200
    long failed;           ///< the others
    int64_t body_bytes;    ///< body bytes received in all
} raw_curl_result;

/// Fetches `url` `count` times with at most `in_flight` transfers at once, through one curl
/// multi handle driven by curl_multi_poll, with the options HTTPOperations sets (NOSIGNAL,
/// ACCEPT_ENCODING "", HTTP/2 over TLS, keep-alive, no redirects). Each body is copied into a
/// fresh, growing memory buffer, as HTTPOperations does by default.
///
/// With `path` non-NULL, bodies are written to that file instead (truncated for each
/// transfer), through stdio. With `reuse_buffer` non-zero, each transfer slot keeps its
/// memory buffer, and its capacity, for its next body instead of a fresh one.
raw_curl_result raw_curl_run(const char *url, long count, long in_flight, const char *path, int reuse_buffer);

#endif
