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
/// ACCEPT_ENCODING "", HTTP/2 over TLS, keep-alive, no redirects, a connection cache of four
/// per transfer in flight). Each body is copied into a
/// fresh, growing memory buffer, as HTTPOperations does by default.
///
/// With `path` non-NULL, bodies are written to that file instead (truncated for each
/// transfer), through stdio. With `reuse_buffer` non-zero, each transfer slot keeps its
/// memory buffer, and its capacity, for its next body instead of a fresh one.
///
/// With `ca_file` non-NULL, TLS servers are verified against that PEM file's authorities
/// (CURLOPT_CAINFO) instead of the system's. With `multiplex` non-zero, transfers wait for a
/// connection that may multiplex (CURLOPT_PIPEWAIT), as HTTPOperations' do for an https
/// origin not yet known to answer over HTTP/1.x: over HTTP/2 they become streams on one
/// connection instead of each opening its own.
raw_curl_result raw_curl_run(const char *url, long count, long in_flight, const char *path, int reuse_buffer,
                             const char *ca_file, int multiplex);

/// Open loop: request `i` of `count` falls due `i / rate` seconds after the start, whatever is
/// still in flight, and starts then if fewer than `max_in_flight` transfers are running (else
/// as soon as one ends, in order). `latencies[i]` gets, in seconds, the time from when request
/// `i` fell due to when its answer was complete (so its wait counts), or stays -1 when it
/// failed. `ca_file` as for raw_curl_run.
raw_curl_result raw_curl_open_loop(const char *url, long count, double rate, const char *ca_file,
                                   long max_in_flight, double *latencies);

/// POSTs to `url` `count` times, at most `in_flight` at once, with the options of raw_curl_run:
/// `json` as an `application/json` body when non-NULL, otherwise the file at `file_path`, read
/// with stdio as curl asks for bytes (its size as `Content-Length`). `body_bytes` counts the
/// answers' bytes.
raw_curl_result raw_curl_upload(const char *url, long count, long in_flight, const char *json, const char *file_path,
                                const char *ca_file);

#endif
