import COpenSSL

/// OpenSSL's state lives as long as the process. Left to itself, libcrypto
/// frees it from an exit handler, while a tool's other threads may still be
/// ending or working: serve's responder signals that it has stopped a moment
/// before its thread ends, a handshake thread may be mid-handshake at
/// SIGTERM, a browse that lost the race is still finishing. A thread that
/// ends after that cleanup loses its OpenSSL error queue unfreed (904 bytes
/// that LeakSanitizer reports, failing the tool), and one still in a
/// handshake would use freed state. The process's end frees it all anyway.
public enum OpenSSLLifetime {
    /// Turns libcrypto's exit handler off. Only the first initialisation of
    /// OpenSSL decides, so this is called before any other OpenSSL use: the
    /// tools call it first thing in `Tool.main`.
    public static func keepUntilExit() {
        _ = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
    }
}
