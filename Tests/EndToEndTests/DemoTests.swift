import Foundation
import Testing

/// scripts/demo.sh, the household `make demo` runs, as a user would pipe it.
@Suite struct DemoTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Piped into a file or a pager, the transcript holds no escape sequence:
    /// no bold steps, no progress, no colour QR.
    @Test func demoPipedRunsToTheEndWithoutEscapes() throws {
        let r = try Tools.run("/bin/bash", [Self.root + "/scripts/demo.sh", Tools.binDir], env: ["TERM": "xterm-256color"], timeout: 300)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("# Done."), "\(r.out)")
        // The tombstone step says who decides, shows the owner purging, and the member dropping it at its next contact.
        #expect(r.out.contains("On a member, tombstone-gc purges nothing by itself"), "\(r.out)")
        #expect(r.out.contains("{\"purged\":1,"), "\(r.out)")
        #expect(r.out.contains("\"purgeRecords\":{\"sent\":0,\"received\":1}"), "\(r.out)")
        #expect(!r.stdout.contains(0x1B), "an escape in the piped transcript")
        #expect(!r.stderr.contains(0x1B), "an escape on the piped standard error")
    }
}
