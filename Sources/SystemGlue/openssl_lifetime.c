/* The deprecated per-library loaders are the only public way left to load
   OpenSSL's error texts once their automatic loading is turned off. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include "system_glue.h"

/* OpenSSL's state lives as long as the process. Left to itself, libcrypto
   frees it from an exit handler while the process's other threads may still
   be ending or working: serve's responder signals that it has stopped a
   moment before its thread ends, a handshake thread may be mid-handshake at
   SIGTERM, a browse that lost the race is still finishing. A thread that
   ends after that cleanup loses its OpenSSL error queue unfreed (904 bytes
   that LeakSanitizer reports), and one still in a handshake would use freed
   state. The end of the process frees it all anyway.

   Only OpenSSL's first initialisation decides, so every tool calls this
   first thing (Tool.main). The same call leaves out what OpenSSL would
   otherwise read or build on first use, together a fifth of a jws-verify
   run:
   - the system's configuration (openssl.cnf, or the file OPENSSL_CONF
     names): the protocol's algorithms are fixed, a configuration could only
     narrow or break them, and a tool's verdict does not depend on the
     machine it runs on (nor loads a module a variable points to);
   - the legacy names of some 270 ciphers: AES-GCM and TLS's ciphers are
     fetched from the provider, which knows its own names (digest names stay:
     certificate signatures are checked through them);
   - the texts of some 3,000 error reasons, loaded instead the first time an
     error is put into words (fs_openssl_error_texts). */
void fs_openssl_set_up(void) {
    (void)OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_NO_LOAD_CONFIG
                              | OPENSSL_INIT_NO_ADD_ALL_CIPHERS | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS, NULL);
    /* The error queue's thread key, made now, right after the key whose
       destructor frees a thread's OpenSSL state when the thread ends. Made
       later, it could take a lower slot that another library freed in the
       meantime; glibc empties lower slots first, so that destructor would
       find no queue and the queue (904 bytes) would be lost with every
       thread that ends. */
    ERR_clear_error();
}

static void load_error_texts(void) {
    ERR_load_ERR_strings();  /* the libraries' names and the system's reasons */
    ERR_load_ASN1_strings(); ERR_load_ASYNC_strings(); ERR_load_BIO_strings(); ERR_load_BN_strings();
    ERR_load_BUF_strings(); ERR_load_CMS_strings(); ERR_load_COMP_strings(); ERR_load_CONF_strings();
    ERR_load_CRYPTO_strings(); ERR_load_CT_strings(); ERR_load_DH_strings(); ERR_load_DSA_strings();
    ERR_load_EC_strings(); ERR_load_ENGINE_strings(); ERR_load_EVP_strings(); ERR_load_KDF_strings();
    ERR_load_OBJ_strings(); ERR_load_OCSP_strings(); ERR_load_OSSL_STORE_strings(); ERR_load_PEM_strings();
    ERR_load_PKCS12_strings(); ERR_load_PKCS7_strings(); ERR_load_RAND_strings(); ERR_load_RSA_strings();
    ERR_load_TS_strings(); ERR_load_UI_strings(); ERR_load_X509V3_strings(); ERR_load_X509_strings();
    ERR_load_SSL_strings();
}

void fs_openssl_error_texts(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    (void)pthread_once(&once, load_error_texts);
}
