import FamilySync

/// The verifier the proof-verifier target runs, pinned on Apple's App Store
/// Server Library test root (`certs/testCA.der`, the same bytes as
/// Tests/FamilySyncTests/Vectors/apple-test/testCA.der), so the test tokens in
/// the corpus get through the chain checks to the payload checks.
enum FuzzRoots {
    static let testCA = "MIIBgjCCASmgAwIBAgIJALUc5ALiH5pbMAoGCCqGSM49BAMDMDYxCzAJBgNVBAYTAlVTMRMwEQYDVQQIDApDYWxpZm9ybmlhMRIwEAYDVQQHDAlDdXBlcnRpbm8wHhcNMjMwMTA1MjEzMDIyWhcNMzMwMTAyMjEzMDIyWjA2MQswCQYDVQQGEwJVUzETMBEGA1UECAwKQ2FsaWZvcm5pYTESMBAGA1UEBwwJQ3VwZXJ0aW5vMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEc+/Bl+gospo6tf9Z7io5tdKdrlN1YdVnqEhEDXDShzdAJPQijamXIMHf8xWWTa1zgoYTxOKpbuJtDplz1XriTaMgMB4wDAYDVR0TBAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZIzj0EAwMDRwAwRAIgemWQXnMAdTad2JDJWng9U4uBBL5mA7WI05H7oH7c6iQCIHiRqMjNfzUAyiu9h6rOU/K+iTR0I/3Y/NSWsXHX+acc"

    nonisolated(unsafe) static let verifier: ProofVerifier = {
        guard case let .success(der) = Base64URL.decodeStandard(testCA),
              let cert = try? X509Certificate(der: der), let v = try? ProofVerifier(anchors: [cert]) else {
            fatalError("the fuzz verifier's test root does not load")
        }
        return v
    }()
}
