/*
 * What a new TLS connection costs libcurl, and how many resume: GETs to a listener that
 * closes every connection, with a fixed number in flight and one trust setting.
 *
 *   probe URL CA_FILE COUNT IN_FLIGHT TRUST
 *
 * TRUST is how the CA reaches libcurl:
 *   file-and-folder  CURLOPT_CAINFO = CA_FILE, CURLOPT_CAPATH left at libcurl's default
 *   file             CURLOPT_CAINFO = CA_FILE, no CA folder
 *   blob             CURLOPT_CAINFO_BLOB = CA_FILE's bytes, no CA file or folder
 *                    (what HTTPOperations sets for a policy with its own authorities)
 *   bundle           CURLOPT_CAINFO = CA_FILE.bundle (the system bundle and the CA), no folder
 *   two-files        CA_FILE and CA_FILE.copy (the same bytes) by turns, no folder
 *   bundle-and-file  CA_FILE.bundle and CA_FILE by turns, no folder
 *   bundle-and-blob  CA_FILE.bundle and the blob by turns, no folder (a process whose
 *                    requests go out under the default policy and under its own authorities)
 *   file-no-resume   as "file", with libcurl's TLS session cache off: no handshake resumes
 * The last two show how many stores libcurl keeps built: one per multi handle, or more.
 * Prints how many GETs failed; the caller reads CPU time and the server's resumption log.
 * Set HTTPOP_TRACE_SSLS=1 to see libcurl's session cache at work (curl_global_trace).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t discard(char *bytes, size_t size, size_t count, void *user) {
    (void)bytes; (void)user;
    return size * count;
}

/* CA_FILE with SUFFIX appended, in a buffer of its own per suffix. */
static const char *sibling(const char *ca_file, const char *suffix, char *buffer, size_t size) {
    snprintf(buffer, size, "%s%s", ca_file, suffix);
    return buffer;
}

/* Sets the trust of request number N (the turns of the alternating settings). */
static void trust(CURL *easy, const char *how, const char *ca_file, struct curl_blob *blob, int n) {
    static char copy[4096], bundle[4096];
    const char *file = NULL;
    if (strcmp(how, "bundle") == 0) file = sibling(ca_file, ".bundle", bundle, sizeof bundle);
    if (strcmp(how, "two-files") == 0) file = n % 2 ? sibling(ca_file, ".copy", copy, sizeof copy) : ca_file;
    if (strcmp(how, "bundle-and-file") == 0) file = n % 2 ? sibling(ca_file, ".bundle", bundle, sizeof bundle) : ca_file;
    if (strcmp(how, "bundle-and-blob") == 0 && n % 2) file = sibling(ca_file, ".bundle", bundle, sizeof bundle);
    if (file) {
        curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, NULL);
        curl_easy_setopt(easy, CURLOPT_CAINFO, file);
        curl_easy_setopt(easy, CURLOPT_CAPATH, NULL);
    } else if (strcmp(how, "file-and-folder") == 0) {
        curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file);
    } else if (strcmp(how, "file") == 0 || strcmp(how, "file-no-resume") == 0) {
        curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file);
        curl_easy_setopt(easy, CURLOPT_CAPATH, NULL);
        curl_easy_setopt(easy, CURLOPT_SSL_SESSIONID_CACHE, strcmp(how, "file") == 0 ? 1L : 0L);
    } else {
        curl_easy_setopt(easy, CURLOPT_CAINFO, NULL);
        curl_easy_setopt(easy, CURLOPT_CAPATH, NULL);
        curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, blob);
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: probe URL CA_FILE COUNT IN_FLIGHT TRUST (see the top of probe.c)\n");
        return 2;
    }
    const char *url = argv[1], *ca_file = argv[2], *how = argv[5];
    static const char *known[] = { "file-and-folder", "file", "blob", "bundle", "two-files",
                                   "bundle-and-file", "bundle-and-blob", "file-no-resume" };
    int recognised = 0;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) recognised |= strcmp(how, known[i]) == 0;
    if (!recognised) { fprintf(stderr, "probe: unknown TRUST '%s'\n", how); return 2; }
    int count = atoi(argv[3]), in_flight = atoi(argv[4]);
    static char pem[1 << 16];
    FILE *file = fopen(ca_file, "rb");
    if (!file) { perror(ca_file); return 2; }
    struct curl_blob blob = { pem, fread(pem, 1, sizeof pem, file), CURL_BLOB_COPY };
    fclose(file);
    if (getenv("HTTPOP_TRACE_SSLS")) curl_global_trace("ssls");

    CURLM *multi = curl_multi_init();
    int started = 0, finished = 0, failed = 0;
    for (int i = 0; i < in_flight && started < count; i++, started++) {
        CURL *easy = curl_easy_init();
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(easy, CURLOPT_VERBOSE, getenv("HTTPOP_TRACE_SSLS") ? 1L : 0L);
        trust(easy, how, ca_file, &blob, started);
        curl_multi_add_handle(multi, easy);
    }
    while (finished < count) {
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int queued;
        while ((message = curl_multi_info_read(multi, &queued))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result != CURLE_OK || status != 200) failed++;
            finished++;
            curl_multi_remove_handle(multi, easy);
            if (started < count) {
                trust(easy, how, ca_file, &blob, started);
                started++;
                curl_multi_add_handle(multi, easy);  /* the same handle, its trust set again */
            } else {
                curl_easy_cleanup(easy);
            }
        }
        curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    curl_multi_cleanup(multi);
    printf("%d of %d failed\n", failed, count);
    return failed ? 1 : 0;
}
