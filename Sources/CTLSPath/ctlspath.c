#include "ctlspath.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

/// How many leading certificates of `chain` are linked by signatures from the leaf.
static int signed_prefix_length(STACK_OF(X509) *chain) {
    int count = sk_X509_num(chain);
    if (count <= 0) return 0;
    int linked = 1;
    for (int index = 0; index + 1 < count; index++) {
        EVP_PKEY *issuer_key = X509_get0_pubkey(sk_X509_value(chain, index + 1));
        if (issuer_key == NULL || X509_verify(sk_X509_value(chain, index), issuer_key) != 1) break;
        linked = index + 2;
    }
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
