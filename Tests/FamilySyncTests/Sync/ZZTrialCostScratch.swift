import Foundation
import Testing
@testable import FamilySync

@Suite struct ZZTrialCostScratch {
    @Test func measure() throws {
        let fam = "11111111-2222-4333-8444-555555555555"
        var held: [HeldKey] = [HeldKey(.family(epoch: 0), secret: try SecretBytes.random(count: 32))]
        for _ in 0..<256 { held.append(HeldKey(.device(member: try randomUUID()), secret: try SecretBytes.random(count: 32))) }
        for _ in 0..<16 { let n = Base32.encode(try secureRandomBytes(20)); held.append(HeldKey(.offer(nonce: n), secret: SecretBytes(n.utf8))) }
        var t0 = Date()
        let keys = try TrialKeys(held, family: fam, use: .identity)
        print("SCRATCH derive \(held.count) keys: \(Date().timeIntervalSince(t0) * 1000) ms")
        let id = try SessionIdentity.sync(client: try randomUUID(), server: try randomUUID()).sealed(family: fam, under: HeldKey(.family(epoch: 0), secret: try SecretBytes.random(count: 32)))
        let n = 2000
        t0 = Date()
        for _ in 0..<n { _ = try SessionIdentity.read(id, keys: keys) }
        print("SCRATCH read unrecognised with \(held.count) keys: \(Date().timeIntervalSince(t0) * 1e6 / Double(n)) us per identity")
        let two = try TrialKeys(Array(held.prefix(2)), family: fam, use: .identity)
        t0 = Date()
        for _ in 0..<n { _ = try SessionIdentity.read(id, keys: two) }
        print("SCRATCH read unrecognised with 2 keys: \(Date().timeIntervalSince(t0) * 1e6 / Double(n)) us per identity")
    }
}
