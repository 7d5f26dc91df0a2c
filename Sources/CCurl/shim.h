#ifndef HTTPOPERATIONS_CCURL_SHIM_H
#define HTTPOPERATIONS_CCURL_SHIM_H

// libcurl for Swift.
//
// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic C functions, which
// Swift cannot call. Each wrapper below fixes the type of the one variadic argument, so the
// Swift side picks the wrapper that matches the option's documented type and the C compiler
// checks the rest. Nothing here adds behaviour.

#include <curl/curl.h>
#include <sys/epoll.h>

// MARK: - Easy handle options

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// For string options: curl copies the string (since 7.17), so it may be freed afterwards.
static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For object and user-data options (CURLOPT_PRIVATE, CURLOPT_*DATA, CURLOPT_HTTPHEADER).
static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// CURLOPT_WRITEFUNCTION, CURLOPT_HEADERFUNCTION and CURLOPT_READFUNCTION share this shape.
typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);

static inline CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_xferinfo_callback(CURL *handle, curl_xferinfo_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

static inline CURLcode ccurl_easy_setopt_seek_callback(CURL *handle, curl_seek_callback value) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, value);
}

/// For blob options (CURLOPT_CAINFO_BLOB, CURLOPT_SSLCERT_BLOB, CURLOPT_SSLKEY_BLOB): curl
/// copies the bytes (CURL_BLOB_COPY), so they may be freed afterwards.
static inline CURLcode ccurl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length) {
    struct curl_blob blob = { (void *)data, length, CURL_BLOB_COPY };
    return curl_easy_setopt(handle, option, &blob);
}

/// CURLOPT_TRAILERFUNCTION: the trailer fields of a chunked request body.
static inline CURLcode ccurl_easy_setopt_trailer_callback(CURL *handle, curl_trailer_callback value) {
    return curl_easy_setopt(handle, CURLOPT_TRAILERFUNCTION, value);
}

/// CURLOPT_DEBUGFUNCTION: sees the raw bytes of a response body (CURLINFO_DATA_IN) when
/// CURLOPT_VERBOSE is on.
static inline CURLcode ccurl_easy_setopt_debug_callback(CURL *handle, curl_debug_callback value) {
    return curl_easy_setopt(handle, CURLOPT_DEBUGFUNCTION, value);
}

static inline CURLcode ccurl_easy_setopt_prereq_callback(CURL *handle, curl_prereq_callback value) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, value);
}

// MARK: - Easy handle information

static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

// MARK: - Share handle options

static inline CURLSHcode ccurl_share_setopt_long(CURLSH *handle, CURLSHoption option, long value) {
    return curl_share_setopt(handle, option, value);
}

// MARK: - Multi handle options

static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLMcode ccurl_multi_setopt_pointer(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLMcode ccurl_multi_setopt_socket_callback(CURLM *handle, curl_socket_callback value) {
    return curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, value);
}

static inline CURLMcode ccurl_multi_setopt_timer_callback(CURLM *handle, curl_multi_timer_callback value) {
    return curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, value);
}

// MARK: - Values that are macros in curl.h (Swift does not import function-like or cast macros)

static const long ccurl_auth_basic = (long)CURLAUTH_BASIC;
static const long ccurl_auth_digest = (long)CURLAUTH_DIGEST;
static const curl_socket_t ccurl_socket_timeout = CURL_SOCKET_TIMEOUT;
static const int ccurl_readfunc_abort = CURL_READFUNC_ABORT;
static const size_t ccurl_readfunc_pause = CURL_READFUNC_PAUSE;
static const size_t ccurl_writefunc_pause = CURL_WRITEFUNC_PAUSE;
static const int ccurl_pause_cont = CURLPAUSE_CONT;
static const int ccurl_seekfunc_ok = CURL_SEEKFUNC_OK;
static const int ccurl_seekfunc_fail = CURL_SEEKFUNC_FAIL;
static const int ccurl_seekfunc_cantseek = CURL_SEEKFUNC_CANTSEEK;
static const int ccurl_prereqfunc_ok = CURL_PREREQFUNC_OK;
static const int ccurl_prereqfunc_abort = CURL_PREREQFUNC_ABORT;

#endif
