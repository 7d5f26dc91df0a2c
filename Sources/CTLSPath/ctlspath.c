#include "ctlspath.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/// How many leading certificates of `chain` are linked from the leaf: each one after the leaf
/// is a certificate authority (basicConstraints, `X509_check_ca`), may issue the one before
/// it (names, key identifiers and keyCertSign, `X509_check_issued`), and its key verifies that
/// one's signature (`X509_verify`). A signature alone is not enough: OpenSSL builds the chain
/// by names, so an end-entity certificate under a pinned authority could otherwise sign a
/// leaf for any host and put the authority on the path.
static int signed_prefix_length(STACK_OF(X509) *chain) {
    int count = sk_X509_num(chain);
    if (count <= 0) return 0;
    int linked = 1;
    // Failed checks leave errors on the thread's OpenSSL queue, which is curl's too.
    ERR_set_mark();
    for (int index = 0; index + 1 < count; index++) {
        X509 *subject = sk_X509_value(chain, index), *issuer = sk_X509_value(chain, index + 1);
        EVP_PKEY *issuer_key = X509_get0_pubkey(issuer);
        if (issuer_key == NULL || X509_check_ca(issuer) < 1 || X509_check_issued(issuer, subject) != X509_V_OK
            || X509_verify(subject, issuer_key) != 1) break;
        linked = index + 2;
    }
    ERR_pop_to_mark();
    return linked;
}

long httpop_tls_verified_path(void *ssl, void *context, httpop_tls_certificate_sink sink) {
    if (ssl == NULL) return -1;
    STACK_OF(X509) *chain = SSL_get0_verified_chain((SSL *)ssl);
    if (chain == NULL || sk_X509_num(chain) <= 0) return -1;
    // OpenSSL builds the chain even when verification fails (and the handshake goes on with
    // invalid certificates allowed): then only what the signatures prove counts.
    int count = httpop_tls_path_is_verified(ssl) ? sk_X509_num(chain) : signed_prefix_length(chain);
    for (int index = 0; index < count; index++) {
        unsigned char *der = NULL;
        int length = i2d_X509(sk_X509_value(chain, index), &der);
        if (length <= 0 || der == NULL) return -1;
        sink(context, der, (size_t)length);
        OPENSSL_free(der);
    }
    return count;
}

int httpop_tls_path_is_verified(void *ssl) {
    return ssl != NULL && SSL_get_verify_result((SSL *)ssl) == X509_V_OK;
}
