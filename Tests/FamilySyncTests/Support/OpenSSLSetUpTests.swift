import COpenSSL
import Testing
@testable import FamilySync

/// OpenSSL is set up before main in every program that links the library
/// (SystemGlue's openssl_lifetime.c), this test process included: without
/// the legacy cipher-name table and without error texts until one is needed.
@Suite struct OpenSSLSetUpTests {
    /// The set-up ran here: the legacy name table was never built. AES-GCM,
    /// fetched from the provider by its own name, still seals and opens.
    @Test func ciphersComeFromTheProviderWithoutTheLegacyNameTable() throws {
        #expect(EVP_get_cipherbyname("AES-256-GCM") == nil)
        let key = SecretBytes([UInt8](repeating: 7, count: 32))
        let box = try AES256GCM.sealWithFreshNonce(Array("receipt".utf8), key: key, aad: [1])
        let opened = try AES256GCM.openWithAny(box, keys: [try AES256GCMKey(key)], aad: [1])
        #expect(opened?.plaintext == Array("receipt".utf8))
    }

    /// An error put into words names OpenSSL's library and reason, loaded on
    /// that first use, not the bare codes ("lib(6)", "reason(155)").
    @Test func anOpenSSLErrorIsPutIntoWords() {
        do {
            _ = try X509Certificate(der: [0x30, 0x82, 0xFF, 0xFF, 0x01])
            Issue.record("five bytes parsed as a certificate")
        } catch {
            let text = "\(error)"
            #expect(text.contains("asn1 encoding routines"), "\(text)")
            #expect(text.contains("too long"), "\(text)")
            #expect(!text.contains("lib(") && !text.contains("reason("), "\(text)")
        }
    }
}
