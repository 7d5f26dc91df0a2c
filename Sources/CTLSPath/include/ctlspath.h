#ifndef HTTPOPERATIONS_CTLSPATH_H
#define HTTPOPERATIONS_CTLSPATH_H

// The certification path OpenSSL verified for a TLS connection, for pinning.
//
// libcurl's CURLINFO_CERTINFO lists what the server *sent* (SSL_get_peer_cert_chain),
// including certificates that are on no verified path: anyone can append a public
// certificate to the chain they send. Pins must be compared with the path that was actually
// verified, from the leaf to the anchor (SSL_get0_verified_chain), which is what this reads.
// OpenSSL is the library libcurl4-openssl-dev is built on; the SSL* comes from libcurl's
// CURLINFO_TLS_SSL_PTR.

#include <stddef.h>

/// Receives one certificate of the path, as DER. `der` is valid only during the call.
typedef void (*httpop_tls_certificate_sink)(void *context, const unsigned char *der, size_t length);

/// Hands `sink` the certificates of the path OpenSSL verified on the connection `ssl` (an
/// OpenSSL `SSL *`), leaf first, anchor last.
///
/// When verification did not succeed (the policy allows invalid certificates, so the handshake
/// went on), only the leading certificates linked from the leaf are handed over: the leaf
/// (whose key the handshake proved), then each certificate that is an authority, may issue
/// the one before it, and whose key verifies its signature, up to the first that is not. A
/// certificate that was merely sent never counts.
///
/// Returns how many certificates were handed over, or -1 when the connection has no verified
/// chain (no handshake with a certificate, or a resumed session).
long httpop_tls_verified_path(void *ssl, void *context, httpop_tls_certificate_sink sink);

/// Whether the chain of `ssl` was verified (`SSL_get_verify_result` is `X509_V_OK`).
int httpop_tls_path_is_verified(void *ssl);

#endif
