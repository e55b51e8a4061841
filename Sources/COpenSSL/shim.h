#ifndef FAMILY_SYNC_COPENSSL_SHIM_H
#define FAMILY_SYNC_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <openssl/objects.h>

/* Macros that do not import into Swift. */
static inline long fs_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) { return SSL_CTX_set_min_proto_version(ctx, v); }
static inline long fs_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int v) { return SSL_CTX_set_max_proto_version(ctx, v); }
static inline long fs_SSL_set_tlsext_host_name(SSL *ssl, const char *name) { return SSL_set_tlsext_host_name(ssl, name); }
static inline void fs_OPENSSL_free(void *p) { OPENSSL_free(p); }
static inline int fs_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline STACK_OF(X509) *fs_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int fs_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline void fs_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
static inline long fs_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long fs_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_session_cache_mode(ctx, mode); }
static inline uint64_t fs_SSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }
static inline uint64_t fs_SSL_OP_ALLOW_NO_DHE_KEX(void) { return SSL_OP_ALLOW_NO_DHE_KEX; }
static inline X509 *fs_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
static inline unsigned long fs_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }
#endif
