import Foundation

/// Runs a built executable as a user would and captures what it did.
struct ToolResult {
    var status: Int32
    var stdout: Data
    var stderr: Data
    var out: String { String(decoding: stdout, as: UTF8.self) }
    var err: String { String(decoding: stderr, as: UTF8.self) }
    var lines: [String] { out.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
}

enum Tools {
    /// This process ignores SIGPIPE, as every tool does: a tool that exits
    /// before reading all its input, or a serve that closes a connection a
    /// test's own client still writes to, makes that write fail with EPIPE
    /// instead of ending the whole test run. Set on first use of the tools.
    static let brokenPipesAreErrors: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// The folder holding the six tools: $FAMILY_SYNC_BIN (the package's
    /// usr/bin when `make test` runs the suite), else the build folder above
    /// the test bundle; where a folder holds the two binaries the tools are
    /// links to but not the links, they are made in its `tools` folder.
    static let binDir: String = {
        _ = brokenPipesAreErrors
        if let b = ProcessInfo.processInfo.environment["FAMILY_SYNC_BIN"], !b.isEmpty { return linkedTools(b) }
        var url = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        // .build/debug/family-syncPackageTests.xctest → .build/debug
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("family-sync").path) { return linkedTools(url.path) }
        }
        return ".build/debug"
    }()

    /// Each tool and the binary that carries it (Sources/family-sync, Sources/family-sync-qr).
    static let carriers = ["jws-verify": "family-sync", "merge-records": "family-sync", "peer-sync": "family-sync",
                           "tombstone-gc": "family-sync", "pair-qr": "family-sync-qr", "pair-scan": "family-sync-qr"]

    /// `dir` when it holds the tools as links (an installed tree); else, when
    /// it holds the binaries, `dir/tools`, with a link named after each tool
    /// to its binary in `dir`, as `make install` lays them out. (A build
    /// folder may still hold tool binaries of an older layout: never those.)
    private static func linkedTools(_ dir: String) -> String {
        let fm = FileManager.default
        let installed = (try? fm.destinationOfSymbolicLink(atPath: dir + "/merge-records")) != nil
        guard !installed, fm.isExecutableFile(atPath: dir + "/family-sync") else { return dir }
        let links = dir + "/tools"
        try? fm.createDirectory(atPath: links, withIntermediateDirectories: true)
        for (tool, binary) in carriers where (try? fm.destinationOfSymbolicLink(atPath: links + "/" + tool)) != "../" + binary {
            try? fm.removeItem(atPath: links + "/" + tool)
            try? fm.createSymbolicLink(atPath: links + "/" + tool, withDestinationPath: "../" + binary)
        }
        return links
    }

    /// A built tool by name, or any program by absolute path.
    static func path(_ tool: String) -> String { tool.hasPrefix("/") ? tool : binDir + "/" + tool }

    /// Runs `tool args` with `stdin` and extra environment; waits at most `timeout` seconds.
    @discardableResult
    static func run(_ tool: String, _ args: [String] = [], stdin: Data? = nil, env: [String: String] = [:],
                    stdoutPath: String? = nil, timeout: TimeInterval = 120) throws -> ToolResult {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path(tool))
        p.arguments = args
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "FAMILY_SYNC_DB")
        for (k, v) in env { environment[k] = v }
        p.environment = environment
        let outPipe = Pipe(), errPipe = Pipe(), inPipe = Pipe()
        if let stdoutPath { p.standardOutput = FileHandle(forWritingAtPath: stdoutPath) } else { p.standardOutput = outPipe }
        p.standardError = errPipe
        p.standardInput = inPipe
        try p.run()
        // Read both pipes concurrently so a chatty tool cannot deadlock on a full pipe.
        let group = DispatchGroup()
        nonisolated(unsafe) var outData = Data(), errData = Data()
        group.enter()
        DispatchQueue.global().async { outData = outPipe.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { errData = errPipe.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        if let stdin { try? inPipe.fileHandleForWriting.write(contentsOf: stdin) }
        try? inPipe.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(2000) }
        if p.isRunning { p.terminate(); kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        if stdoutPath != nil { try? outPipe.fileHandleForWriting.close() }
        group.wait()
        return ToolResult(status: p.terminationStatus, stdout: outData, stderr: errData)
    }

    /// Runs `tool args` through /bin/sh with `redirections` applied to the
    /// tool itself (`2>&-`, `2>/dev/full`, `<&-`): what Process cannot set up.
    @discardableResult
    static func run(_ tool: String, _ args: [String] = [], redirecting redirections: String, timeout: TimeInterval = 120) throws -> ToolResult {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", "exec \"$0\" \"$@\" \(redirections)", path(tool)] + args
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "FAMILY_SYNC_DB")
        p.environment = environment
        let outPipe = Pipe(), errPipe = Pipe()
        p.standardOutput = outPipe
        p.standardError = errPipe
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let group = DispatchGroup()
        nonisolated(unsafe) var outData = Data(), errData = Data()
        group.enter()
        DispatchQueue.global().async { outData = outPipe.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { errData = errPipe.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(2000) }
        if p.isRunning { p.terminate(); kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        group.wait()
        return ToolResult(status: p.terminationStatus, stdout: outData, stderr: errData)
    }

    static func run(_ tool: String, _ args: [String] = [], input: String, env: [String: String] = [:]) throws -> ToolResult {
        try run(tool, args, stdin: Data(input.utf8), env: env)
    }
}

/// A temporary folder removed when the value goes away.
final class TempDir {
    let path: String
    init() {
        var template = Array((NSTemporaryDirectory() + "/family-sync-test.XXXXXX").utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
    func write(_ name: String, _ text: String) -> String {
        let p = file(name)
        _ = FileManager.default.createFile(atPath: p, contents: Data(text.utf8))
        return p
    }
}
