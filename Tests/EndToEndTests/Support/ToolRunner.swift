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
    /// The folder holding the built tools: $FAMILY_SYNC_BIN, else the folder of the test bundle.
    static let binDir: String = {
        if let b = ProcessInfo.processInfo.environment["FAMILY_SYNC_BIN"], !b.isEmpty { return b }
        var url = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        // .build/debug/family-syncPackageTests.xctest → .build/debug
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("merge-records").path) { return url.path }
        }
        return ".build/debug"
    }()

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
