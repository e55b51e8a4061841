import FoundationEssentials
import Glibc

/// Entry points for fuzzing the core's parsers of outside bytes, one per
/// parser: bytes in, nothing out, no crash whatever the bytes. They reach
/// types that are internal to the core (the frame decoder, the control
/// messages), so they live here, visible to the rest of the package only
/// (`FamilySyncFuzz` gathers them with the image and command-line ones).
/// A failed `precondition` here is a finding: a parser broke a promise that
/// its callers rely on.
package enum CoreFuzzEntries {
    /// The fixed clock every entry judges times against, so a finding replays.
    package static let now = Timestamp(milliseconds: 1_796_032_800_000)  // 2026-11-30T10:00:00Z

    // MARK: records

    /// One record line, as merge-records and a RECORDS frame read it: the
    /// scanner in both modes, then the `Record` built from a good scan, and
    /// the line rewritten with a new stamp.
    package static func recordLine(_ data: UnsafeRawBufferPointer) {
        guard let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            _ = try? Record(line: "")
            return
        }
        for mode in [RecordScanMode.exchanged, .localEdit] {
            guard let scan = try? RecordScanner.scan(base, start: 0, end: data.count, mode: mode) else { continue }
            let r = Record(base: base, scan: scan)
            precondition(r.photos.count == scan.photoCount, "photo count differs from the scan")
            var out: [UInt8] = []
            "F0F0F0F0-0000-4000-8000-000000000000".utf8.withContiguousStorageIfAvailable { dev in
                RecordLine.rewrite(base, scan, time: now.milliseconds, device: UnsafeRawBufferPointer(dev),
                                   ensureDeleted: true, into: &out)
            }
            // A rewritten line is a record again, with the new stamp. (A local
            // delete may give only its id: the store supplies the type.)
            let again = try? Record(line: String(decoding: out, as: UTF8.self), mode: .exchanged)
            precondition(!scan.type.isPresent || again?.modifiedAt == now, "a rewritten line does not parse back with its stamp")
            if scan.type.isPresent { authorshipRoundTrip(base, scan) }
        }
        if let r = try? Record(line: String(decoding: data, as: UTF8.self)) {
            // The line a record keeps is itself a valid record with the same version.
            let again = try? Record(line: r.line)
            precondition(again.map { $0.id == r.id && $0.modifiedAt == r.modifiedAt && $0.deviceID == r.deviceID && $0.deleted == r.deleted } == true, "a record's own line does not parse back to it")
        }
    }

    /// A fixed authorship key, for the tag's round trips.
    static let authorshipKey = try? Authorship.memberKey(deviceKey: SecretBytes([UInt8](repeating: 7, count: 32)),
                                                         family: "F0F0F0F0-0000-4000-8000-000000000000", device: "F0F0F0F0-0000-4000-8000-000000000000")

    /// The line stamped with a tag verifies; pulled back it still does, with
    /// its author's time; moved later it no longer does.
    static func authorshipRoundTrip(_ base: UnsafePointer<UInt8>, _ scan: RecordScan) {
        guard let key = authorshipKey else { return }
        func scanned(_ line: [UInt8]) -> RecordScan? {
            line.withUnsafeBufferPointer { b in b.baseAddress.flatMap { try? RecordScanner.scan($0, start: 0, end: b.count) } }
        }
        func verifies(_ line: [UInt8], _ r: RecordScan) -> Bool { line.withUnsafeBufferPointer { b in b.baseAddress.map { Authorship.verifies($0, r, key: key) } ?? false } }
        var tagged: [UInt8] = []
        "F0F0F0F0-0000-4000-8000-000000000000".utf8.withContiguousStorageIfAvailable { dev in
            RecordLine.rewrite(base, scan, time: now.milliseconds, device: UnsafeRawBufferPointer(dev), ensureDeleted: true, tag: key, into: &tagged)
        }
        guard let t = scanned(tagged) else { preconditionFailure("a stamped line with its tag does not parse back") }
        precondition(t.tagAt >= 0 && verifies(tagged, t), "a stamped line's tag does not verify")
        for (time, holds) in [(now.milliseconds - 1, true), (now.milliseconds + 1, false)] {
            var moved: [UInt8] = []
            tagged.withUnsafeBufferPointer { b in
                // Never nil: `tagged` parsed back above, so it is not empty.
                RecordLine.rewrite(b.baseAddress!, t, time: time, device: nil, ensureDeleted: false, into: &moved)
            }
            guard let m = scanned(moved) else { preconditionFailure("a line pulled back or moved does not parse back") }
            precondition(verifies(moved, m) == holds, holds ? "a pulled-back line's tag does not verify" : "a line moved later keeps a tag that verifies")
        }
    }

    /// Two record files (split at the first NUL byte) merged as merge-records
    /// merges them: line splitting, validation of every line, the LWW merge.
    package static func recordMerge(_ data: UnsafeRawBufferPointer) {
        let bytes = [UInt8](data)
        let cut = bytes.firstIndex(of: 0) ?? bytes.count
        let local = RecordInput(name: "local", data: Array(bytes[..<cut]))
        let remote = RecordInput(name: "remote", data: cut < bytes.count ? Array(bytes[(cut + 1)...]) : [])
        var written = 0
        _ = try? RecordMerge.merge(local: local, remote: remote, now: now, chunkBytes: 64, explain: { _ in }) { written += $0.count }
    }

    // MARK: JSON

    /// The JSON parser every control frame, offer and proof payload goes
    /// through. A parsed value serializes to text that parses back to it.
    package static func json(_ data: UnsafeRawBufferPointer) {
        guard let v = try? JSONParser.parse(data) else { return }
        let text = v.serialized
        let again = try? JSONParser.parse(text)
        precondition(again == v, "serialized JSON does not parse back to the same value")
    }

    // MARK: sync protocol

    /// The frame decoder fed the bytes in pieces whose sizes come from the
    /// input itself, then every frame handed to the decoder of its type.
    package static func frames(_ data: UnsafeRawBufferPointer) {
        guard !data.isEmpty else { return }
        var decoder = FrameDecoder()
        let step = Int(data[0]) + 1
        var at = 1
        var frames = 0
        while at < data.count {
            let n = min(step, data.count - at)
            decoder.append(UnsafeRawBufferPointer(rebasing: data[at..<(at + n)]))
            at += n
            while true {
                let f: Frame?
                do { f = try decoder.next() } catch { return }
                guard let f else { break }
                frames += 1
                decodeMessage(f)
            }
        }
        precondition(decoder.buffered <= data.count, "the decoder holds more than it was given")
    }

    /// One frame: the first byte is its type, the rest its payload.
    package static func message(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let types = FrameType.allCases
        let type = types[Int(first) % types.count]
        decodeMessage(Frame(type, [UInt8](data.dropFirst())))
    }

    /// Decodes `f` as the session would on receiving it.
    static func decodeMessage(_ f: Frame) {
        switch f.type {
        case .hello:
            if let m = try? HelloMessage(f) {
                precondition((try? HelloMessage(Frame(.hello, Array(m.json.serialized.utf8)))) == m, "HELLO does not round-trip")
            }
        case .family: _ = try? FamilyMessage(f)
        case .refused, .busy:
            _ = try? RefusalMessage(f)
            _ = try? FieldReader(f).int("retryAfterMs", max: 60_000)
        case .join: _ = try? JoinMessage(f)
        case .welcome: _ = try? WelcomeMessage(f)
        case .records: recordBatch(f.payload)
        case .recordsEnd: _ = try? FieldReader(f).int("count")
        case .recordsMark:
            if let m = try? RecordsMarkMessage(f) {
                precondition((try? RecordsMarkMessage(Frame(.recordsMark, Array(m.json.serialized.utf8)))) == m, "RECORDS-MARK does not round-trip")
            }
        case .purged:
            guard let store = scratchStore else { return }
            _ = try? f.payload.withUnsafeBytes { b in try store.write { try store.applyPurgeBatch(b) } }
            if let fam = try? store.family() { _ = try? f.payload.withUnsafeBytes { b in try store.write { try store.receivePurgePayload(b, family: fam) } } }
        case .photoRequest:
            guard let store = scratchStore else { return }
            _ = try? PhotoResponder(store: store, faults: []).enqueue(f)
        case .photoData:
            guard let store = scratchStore else { return }
            _ = try? PhotoWaves(store: store, waveTimeout: .seconds(30)).handleData(f, now: now)
        case .photoUnavailable:
            guard let store = scratchStore else { return }
            _ = try? PhotoWaves(store: store, waveTimeout: .seconds(30)).handleUnavailable(f)
        case .done: _ = try? DoneMessage(f)
        case .ping: break
        case .error: _ = try? FieldReader(f).string("message", maxBytes: 1024)
        }
    }

    /// A RECORDS payload cut into lines as the session cuts it, each a record.
    static func recordBatch(_ payload: [UInt8]) {
        var start = 0
        while start < payload.count {
            let end = payload[start...].firstIndex(of: 0x0A) ?? payload.count
            if end > start { _ = try? Record(line: String(decoding: payload[start..<end], as: UTF8.self)) }
            start = end + 1
        }
    }

    /// An empty store in a private temporary folder (removed at exit) for the
    /// photo decoders, which hold one; nothing the fuzzer sends reaches it.
    nonisolated(unsafe) static let scratchStore: Store? = {
        var template = Array(((ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/family-sync-fuzz.XXXXXX").utf8CString)
        // Never nil: the template is a non-empty literal.
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) }) else { return nil }
        scratchFolder = dir
        atexit { if let d = CoreFuzzEntries.scratchFolder { try? FileManager.default.removeItem(atPath: d) } }
        return try? Store(path: dir + "/scratch.db")
    }()
    nonisolated(unsafe) static var scratchFolder: String?

    // MARK: entitlement proofs

    /// A compact JWS cut into segments, its header judged and its payload
    /// decoded as each kind of signed object.
    package static func compactJWS(_ data: UnsafeRawBufferPointer) {
        guard case let .success(jws) = CompactJWS.split(data) else { return }
        precondition(jws.header.upperBound <= data.count && jws.payload.upperBound <= data.count
                     && jws.signature.upperBound <= data.count, "a JWS segment outside the token")
        _ = JWSHeader.evaluate(UnsafeRawBufferPointer(rebasing: data[jws.header]))
        for kind in SignedPayloadKind.allCases {
            _ = SignedPayload.decode(UnsafeRawBufferPointer(rebasing: data[jws.payload]), kind: kind)
        }
    }

    /// A JWS header segment alone (base64url of the header JSON).
    package static func jwsHeader(_ data: UnsafeRawBufferPointer) {
        _ = JWSHeader.evaluate(data)
    }

    /// A JWS payload segment alone, as each kind.
    package static func signedPayload(_ data: UnsafeRawBufferPointer) {
        for kind in SignedPayloadKind.allCases { _ = SignedPayload.decode(data, kind: kind) }
    }

    /// The whole verifier, pinned on the given roots, at the fixed time. The
    /// first byte picks the kind and whether sandbox proofs are allowed.
    package static func proofVerifier(_ data: UnsafeRawBufferPointer, verifier: ProofVerifier) {
        guard let first = data.first else { return }
        let kinds = SignedPayloadKind.allCases
        let policy = ProofPolicy(bundleID: "com.example", products: first & 0x80 != 0 ? ["com.example.product"] : [],
                                 allowSandbox: first & 0x40 != 0)
        let v = verifier.verify(token: UnsafeRawBufferPointer(rebasing: data.dropFirst()), as: kinds[Int(first & 0x3) % kinds.count],
                                policy: policy, now: now)
        _ = v.json.serialized
    }

    /// Base64URL (and the standard alphabet): whatever decodes re-encodes to
    /// text that decodes to the same bytes.
    package static func base64(_ data: UnsafeRawBufferPointer) {
        if case let .success(b) = Base64URL.decode(data) {
            precondition((try? Base64URL.decode(Base64URL.encode(b)).get()) == b, "base64url does not round-trip")
        }
        let text = String(decoding: data, as: UTF8.self)
        if case let .success(b) = Base64URL.decodeStandard(text) {
            precondition((try? Base64URL.decodeStandard(Base64URL.encodeStandard(b)).get()) == b, "base64 does not round-trip")
        }
    }

    /// DER (or PEM) bytes handed to OpenSSL as a certificate, then every
    /// property the chain checks read from one.
    package static func x509(_ data: UnsafeRawBufferPointer) {
        let bytes = [UInt8](data)
        for cert in (try? X509Certificate.load(contents: bytes)) ?? [] {
            _ = cert.subject
            _ = cert.notBefore
            _ = cert.notAfter
            _ = cert.isCA
            _ = cert.hasInvalidExtensions
            _ = cert.hasExtension(oid: "1.2.840.113635.100.6.11.1")
            _ = cert.hasExtension(oid: "not an oid")
            _ = try? cert.publicKey()
            _ = cert.sha256Fingerprint
        }
        _ = try? ECPublicKey(subjectPublicKeyInfo: bytes)
    }

    /// The raw r‖s signature turned into DER for OpenSSL, on both curves: a
    /// conversion that succeeds round-trips back to the same r‖s.
    package static func rawSignature(_ data: UnsafeRawBufferPointer) {
        for curve in ECCurve.allCases {
            guard case let .success(der) = ECDSASignature.der(fromRaw: data, curve: curve) else { continue }
            precondition(ECDSASignature.raw(fromDER: der, curve: curve) == [UInt8](data), "r‖s → DER does not round-trip")
        }
        _ = ECDSASignature.raw(fromDER: [UInt8](data), curve: .p256)
    }

    // MARK: sealed names

    /// The keys the sealed-names entry tries: a family key, a member's
    /// device key and an offer, each fixed (32 bytes of 1, 2; the nonce of
    /// the seeds), so a finding replays. Made for each input: a TrialKeys
    /// is used by one thread at a time.
    static func sealedNameKeys() -> TrialKeys? { try? TrialKeys(
        [HeldKey(.family(epoch: 0), secret: SecretBytes([UInt8](repeating: 1, count: 32))),
         HeldKey(.device(member: "6B3C1A2E-4D5F-4A6B-8C7D-9E0F1A2B3C4D"), secret: SecretBytes([UInt8](repeating: 2, count: 32))),
         HeldKey(.offer(nonce: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), secret: SecretBytes("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8))],
        family: "0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11", use: .identity) }

    /// What a stranger sends before any key is chosen, or in a bundle's
    /// header: the first byte even, the rest is a PSK identity read with the
    /// fixed keys (§3.3), which opens only to what its key may say; odd, the
    /// rest is the padded JSON of a bundle header once opened (§12b).
    package static func sealedNames(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first, let keys = sealedNameKeys() else { return }
        let rest = Array(data.dropFirst())
        if first & 1 == 1 {
            _ = try? BundleHeader(rest)
            return
        }
        guard case let .opened(id, key)? = try? SessionIdentity.read(rest, keys: keys) else { return }
        switch (id, key.kind) {
        case (.sync, .device), (.sync, .family), (.pair, .offer): break
        default: preconditionFailure("an identity opened to what its key may not say")
        }
    }

    // MARK: pairing, times

    /// The pairing offer text and what `join` reads an offer from.
    package static func pairingOffer(_ data: UnsafeRawBufferPointer) {
        let text = String(decoding: data, as: UTF8.self)
        if let offer = try? PairingOffer(text: text, now: now) {
            precondition((try? PairingOffer(text: offer.text, now: now)) == offer, "an offer's text does not parse back to it")
        }
        _ = try? OfferInput.parse(text, source: "input")
        _ = try? PairingOffer.validateAddress(text)
        if let b = Base32.decode(text) { precondition(Base32.decode(Base32.encode(b)) == b, "base32 does not round-trip") }
    }

    /// RFC 3339 times (records, messages, options) and durations (options):
    /// a parsed time prints as text that parses back to it.
    package static func times(_ data: UnsafeRawBufferPointer) {
        if let t = Timestamp.parse(data) {
            precondition(Timestamp(rfc3339: t.rfc3339) == t, "a time does not round-trip through RFC 3339")
        }
        let text = String(decoding: data, as: UTF8.self)
        _ = Timestamp(rfc3339: text)
        if let d = TimeSpan(parsing: text) { _ = d.description; _ = now.adding(d); _ = now.subtracting(d) }
    }
}
