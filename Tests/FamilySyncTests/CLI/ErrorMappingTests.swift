import Foundation
import Glibc
import Testing
@testable import FamilySync
@testable import FamilySyncCLI

/// The CLI's one mapping from the core's errors to exit statuses and
/// messages, and the core's side of the bargain: it has no exit statuses of
/// its own and quotes no command line.
@Suite struct ErrorMappingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// Every Swift file of the core and its image half, with its text.
    static func coreSources() throws -> [(String, String)] {
        var out: [(String, String)] = []
        for dir in ["Sources/FamilySync", "Sources/FamilySyncImaging"] {
            let base = root + "/" + dir
            let e = try #require(FileManager.default.enumerator(atPath: base))
            for case let rel as String in e where rel.hasSuffix(".swift") {
                out.append((dir + "/" + rel, try String(contentsOfFile: base + "/" + rel, encoding: .utf8)))
            }
        }
        return out
    }

    @Test func theCoreHasNoExitStatusesAndQuotesNoCommandLine() throws {
        let files = try Self.coreSources()
        #expect(files.count > 50, "the core's sources were not found under \(Self.root)")
        let tools = ["jws-verify", "pair-qr", "pair-scan", "merge-records", "peer-sync", "tombstone-gc"]
        for (path, text) in files {
            #expect(!text.contains("ToolError"), "\(path) names ToolError")
            #expect(!text.contains("ExitStatus"), "\(path) names ExitStatus")
            // A tool named in quotes ('peer-sync serve') or brackets ((pair-qr)) is a command-line hint.
            for line in text.split(separator: "\n") where line.contains("\"") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for t in tools {
                    #expect(!line.contains("'\(t)") && !line.contains("(\(t))"), "\(path): \(line)")
                }
                #expect(!line.contains("--root") && !line.contains("--listen:") && !line.contains("--backup:"), "\(path): \(line)")
            }
        }
    }

    @Test func fileErrorsAreMissingInputOrIOErrors() {
        #expect(ToolError(FileError(.cannotOpen, path: "in", code: ENOENT)).status == .noInput)
        #expect(ToolError(FileError(.cannotOpen, path: "in", code: EIO)).status == .ioError)
        #expect(ToolError(FileError(.isDirectory, path: "in")).status == .noInput)
        #expect(ToolError(FileError(.readFailed, path: "in", code: EIO)).message == "in: read error: \(String(cString: strerror(EIO)))")
        #expect(ToolError(FileError(.tooLarge, path: "in", limit: 10, size: 11)).status == .dataError)
        let closed = ToolError(StandardInput.closedError)
        #expect(closed.status == .noInput && closed.message == "<stdin>: standard input is closed; give a FILE or pipe the input in")
        // The option that named the file leads the message.
        let root = ToolError(FileError(.cannotOpen, path: "ca.pem", code: ENOENT), option: "--root")
        #expect(root.message == "--root ca.pem: \(String(cString: strerror(ENOENT)))")
    }

    @Test func storeErrorsGetTheirStatusAndTheCommandsHint() {
        #expect(ToolError(StoreError(.missing, path: "s.db")).status == .noInput)
        #expect(ToolError(StoreError(.notAStore, path: "s.db", detail: "not an SQLite database")).status == .dataError)
        #expect(ToolError(StoreError(.cannotOpen, path: "s.db", detail: "x")).status == .ioError)
        #expect(ToolError(StoreError(.inconsistent, detail: "x")).status == .software)
        let served = ToolError(StoreError(.alreadyServed, path: "s.db"))
        #expect(served.status == .tempFail && served.message.contains("another 'peer-sync serve' is already serving the store s.db"))
        #expect(!StoreError(.alreadyServed, path: "s.db").description.contains("peer-sync"))
        let serve = ToolError(StoreError(.noFamily), command: ["peer-sync", "serve"])
        let connect = ToolError(StoreError(.noFamily), command: ["peer-sync", "connect"])
        #expect(serve.status == .noInput && connect.status == .noInput)
        #expect(serve.message.hasSuffix("make an offer with 'pair-qr' (owner) or redeem one with 'peer-sync join'"))
        #expect(connect.message.hasSuffix("redeem an offer with 'peer-sync join' (or make one with 'pair-qr' on the owner's device)"))
        #expect(ToolError(StoreError(.backupCannotCreate, path: "b.db", detail: "exists")).message == "--backup: cannot create b.db: exists")
    }

    @Test func proofAndPairingErrors() {
        let noPolicy = ToolError(ProofError(.noPolicy, path: "s.db"))
        #expect(noPolicy.status == .dataError)
        #expect(noPolicy.message.hasSuffix("; set it once with 'jws-verify --db s.db --bundle-id ID [--product ID]...'"))
        #expect(!ProofError(.noPolicy, path: "s.db").description.contains("jws-verify"))
        #expect(ToolError(PairingError(.addressNotHostPort, source: "x")).status == .usage)
        #expect(ToolError(PairingError(.notOwner, family: "F")).status == .noPermission)
        #expect(ToolError(PairingError(.noOffer, source: "x")).status == .noInput)
        let qr = ToolError(PairingError(.offerMissingQR, source: "o.json", line: 2, field: "qr"))
        #expect(qr.status == .dataError && qr.message == "o.json:2: field 'qr': missing (expected pair-scan's offer JSON)")
        let member = ToolError(PairingError(.alreadyMember, family: "F"))
        #expect(member.status == .usage && member.message == "this store is already in family F; sync with 'peer-sync connect'")
        #expect(ToolError(RecordLineError(file: "in", line: 3, RecordError(field: "id", "missing"))).message == "in:3: id: missing")
    }

    @Test func syncErrorsAndWhatTheyLeftBehind() {
        let noPeer = ToolError(SyncError(.noPeer, peer: "127.0.0.1:1"))
        #expect(noPeer.status == .unavailable && noPeer.message == "no peer at 127.0.0.1:1 (is 'peer-sync serve' running?)")
        #expect(SyncError(.noPeer, peer: "127.0.0.1:1").description == "no peer at 127.0.0.1:1")
        let lost = ToolError(SyncError(.connectionLost, peer: "p", detail: "eof", outcome: .cursorsNotMoved))
        #expect(lost.status == .unavailable && lost.message == "connection to p lost (eof); session ended, cursors not moved")
        let refused = ToolError(SyncError(.refused, peer: "p", detail: "no", reason: "unknown-offer", outcome: .nothingStored))
        #expect(refused.status == .noPermission && refused.message == "refused by p: no (unknown-offer); nothing was stored")
        #expect(ToolError(SyncError(.busy, peer: "p", detail: "1s (2 tries)")).status == .tempFail)
        #expect(ToolError(SyncError(.protocolViolation, peer: "p", detail: "x")).status == .dataError)
        #expect(ToolError(SyncError(.notLocalAddress, peer: "192.0.2.1")).message == "--listen: 192.0.2.1 is not an address of this machine (see 'ip -brief address')")
        let revoked = ToolError(SyncError(.revoked, detail: "2026-01-01T00:00:00Z", family: "F"))
        #expect(revoked.status == .noPermission && revoked.message.contains("'peer-sync join'"))
        // A summary takes its causes' hints, and is busy only when every cause was.
        let causes: [any Error] = [SyncError(.noPeer, peer: "a:1"), SyncError(.busy, peer: "b:1", detail: "1s (1 tries)")]
        let none = ToolError(SyncError(.noPeerCouldSync, causes: causes))
        #expect(none.status == .unavailable && none.message.contains("no peer at a:1 (is 'peer-sync serve' running?); b:1 is busy"))
        #expect(ToolError(SyncError(.noPeerCouldSync, detail: "busy", causes: [causes[1]])).status == .tempFail)
        // A first sync that fails after a join exits as its cause does.
        let first = ToolError(SyncError(.firstSyncFailed, family: "F", causes: [SyncError(.interrupted, peer: "o", outcome: .cursorsNotMoved)]))
        #expect(first.status == .tempFail && first.message == "joined family F, but the first sync failed: interrupted; session with o ended, cursors not moved")
    }

    @Test func anythingElseIsAnInternalError() {
        struct Odd: Error {}
        #expect(ToolError(Odd()).status == .software)
        #expect(ToolError(SystemError("getentropy", code: EIO)).status == .software)
        #expect(ToolError(ToolError(.negative, "x")).status == .negative)
    }
}
