import COpenSSL

/// Pinned trust anchors (`X509_STORE*`) and path validation against them at
/// a chosen time. Only the anchors given here are trusted: no system paths,
/// no partial chains, no certificate from the input is ever made an anchor.
///
/// `X509_V_FLAG_X509_STRICT` is deliberately off: Apple's published test
/// chain has no key identifiers and strict mode refuses it; Apple's own
/// verifiers do not use strict mode either. Not Sendable.
public final class X509TrustStore {
    private let store: OpaquePointer
    public let anchors: [X509Certificate]

    public init(anchors: [X509Certificate]) throws {
        guard let s = X509_STORE_new() else { throw OpenSSLError("X509_STORE_new") }
        store = s
        self.anchors = anchors
        for a in anchors where X509_STORE_add_cert(s, a.handle) != 1 {
            let e = OpenSSLError("X509_STORE_add_cert")
            // Adding the same certificate twice is harmless.
            if !e.queue.contains(where: { $0.contains("cert already in hash table") }) { throw e }
        }
    }

    deinit { X509_STORE_free(store) }

    /// How a path validation failed: OpenSSL's verdict, at which depth, and
    /// which certificate it was looking at.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// OpenSSL's `X509_V_ERR_*` code.
        public var code: Int32
        public var message: String
        /// 0 for the leaf, 1 for the first intermediate, ….
        public var depth: Int32
        public var subject: String?
        public var description: String {
            "\(message) (depth \(depth)\(subject.map { ", \($0)" } ?? ""))"
        }
    }

    /// Validates `leaf` through exactly the given intermediates to one of the
    /// anchors, judging validity periods at `time` (second precision, as
    /// X.509 times are). Returns the validated chain, leaf first, anchor last.
    public func validate(leaf: X509Certificate, intermediates: [X509Certificate], at time: Timestamp) -> Result<[X509Certificate], Failure> {
        guard let ctx = X509_STORE_CTX_new() else {
            return .failure(Failure(code: -1, message: OpenSSLError("X509_STORE_CTX_new").description, depth: 0))
        }
        defer { X509_STORE_CTX_free(ctx) }
        guard let untrusted = fs_sk_X509_new_null() else {
            return .failure(Failure(code: -1, message: OpenSSLError("sk_X509_new_null").description, depth: 0))
        }
        defer { fs_sk_X509_free(untrusted) }
        for c in intermediates { _ = fs_sk_X509_push(untrusted, c.handle) }
        guard X509_STORE_CTX_init(ctx, store, leaf.handle, untrusted) == 1 else {
            return .failure(Failure(code: -1, message: OpenSSLError("X509_STORE_CTX_init").description, depth: 0))
        }
        let param = X509_STORE_CTX_get0_param(ctx)
        X509_VERIFY_PARAM_set_time(param, time_t(floorDiv(time.milliseconds, 1000)))
        // Intermediates allowed between the leaf and the anchor.
        X509_VERIFY_PARAM_set_depth(param, Int32(intermediates.count))
        let ok = X509_verify_cert(ctx)
        OpenSSLError.drain()
        guard ok == 1 else {
            let code = X509_STORE_CTX_get_error(ctx)
            let depth = X509_STORE_CTX_get_error_depth(ctx)
            var subject: String?
            if let bad = X509_STORE_CTX_get_current_cert(ctx) {
                subject = ([leaf] + intermediates + anchors).first { X509_cmp($0.handle, bad) == 0 }?.subject
            }
            let message = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            return .failure(Failure(code: code, message: message, depth: depth, subject: subject))
        }
        // Map OpenSSL's chain back to our objects; anything unexpected is a failure.
        guard let chain = X509_STORE_CTX_get0_chain(ctx) else {
            return .failure(Failure(code: -1, message: "no chain after verification", depth: 0))
        }
        var out: [X509Certificate] = []
        let known = [leaf] + intermediates + anchors
        for i in 0..<fs_sk_X509_num(chain) {
            guard let x = fs_sk_X509_value(chain, i), let mine = known.first(where: { X509_cmp($0.handle, x) == 0 }) else {
                return .failure(Failure(code: -1, message: "the validated chain holds a certificate that was not given", depth: i))
            }
            out.append(mine)
        }
        return .success(out)
    }

    private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}

extension X509TrustStore {
    /// The anchors whose name (and key identifier, when present) match the
    /// issuer of `certificate`: every anchor a path through it could end on.
    public func anchors(issuing certificate: X509Certificate) -> [X509Certificate] {
        let out = anchors.filter { X509_check_issued($0.handle, certificate.handle) == X509_V_OK }
        OpenSSLError.drain()
        return out
    }
}
