import Foundation

/// A program a test runs beside the tools that is not one of ours (a
/// dbus-daemon, an avahi-daemon, avahi-browse), started so that it can never
/// hold up anything else in the test process:
///
/// - every descriptor above 2 is closed in the child before exec
///   (`posix_spawn_file_actions_addclosefrom_np`). Foundation's `Process`
///   closes the descriptors it saw open when it listed them; one opened by
///   another thread in between (the socket through which it learns that a
///   tool ended, a tool's output pipe) is inherited, and a long-lived daemon
///   holding it keeps that tool from ever being seen to end;
/// - stdin is /dev/null and stdout/stderr are files, never the test's pipes;
/// - it leads a process group of its own, so `stop()` reaches whatever it
///   started too;
/// - it is reaped here with waitpid(2) on its pid (Foundation only ever waits
///   for its own children's pids), and every wait has a bound: `stop()` sends
///   SIGTERM, waits `grace`, then SIGKILLs the group and reaps. `deinit`
///   stops it, so a failing test cannot leave it behind.
final class DaemonProcess {
    let pid: pid_t
    let stdoutPath: String
    let stderrPath: String
    private(set) var exitStatus: Int32?

    /// glibc's closefrom action for posix_spawn, looked up at run time: its
    /// declaration is behind _GNU_SOURCE, which Swift's Glibc module does not set.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// Starts `argv` (argv[0] an absolute path) with the test's environment plus `env`.
    init(_ argv: [String], env: [String: String] = [:], dir: TempDir, name: String) throws {
        guard let addCloseFrom = DaemonProcess.addCloseFrom else { throw HarnessError("this libc has no posix_spawn_file_actions_addclosefrom_np") }
        stdoutPath = dir.file("\(name).out")
        stderrPath = dir.file("\(name).err")
        var actions = posix_spawn_file_actions_t()
        var attrs = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attrs)
        defer { posix_spawn_file_actions_destroy(&actions); posix_spawnattr_destroy(&attrs) }
        let write = O_WRONLY | O_CREAT | O_TRUNC
        guard posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) == 0,
              posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, write, 0o600) == 0,
              posix_spawn_file_actions_addopen(&actions, 2, stderrPath, write, 0o600) == 0,
              addCloseFrom(&actions, 3) == 0 else { throw HarnessError("posix_spawn file actions for \(name) failed") }
        // Its own process group; signals as a freshly started program has
        // them (the test process may ignore SIGPIPE or block some).
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, s) }
        posix_spawnattr_setpgroup(&attrs, 0)
        posix_spawnattr_setsigmask(&attrs, &none)
        posix_spawnattr_setsigdefault(&attrs, &defaults)
        posix_spawnattr_setflags(&attrs, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "FAMILY_SYNC_DB")
        for (k, v) in env { environment[k] = v }
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup("\($0)=\($1)") } + [nil]
        defer { for p in cArgs + cEnv { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, argv[0], &actions, &attrs, cArgs, cEnv)
        guard rc == 0 else { throw HarnessError("\(argv[0]): posix_spawn: \(String(cString: strerror(rc)))") }
        pid = child
    }

    deinit { _ = stop() }

    /// Reaps it if it has ended; true once it has.
    func hasExited() -> Bool {
        if exitStatus != nil { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return r == -1 && errno == ECHILD }
        // Exit status, or 128 + the signal that ended it, as a shell says it.
        exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return true
    }

    /// Waits at most `timeout` for it to end; its status, or nil if it still runs.
    func wait(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while !hasExited() {
            if Date() >= deadline { return nil }
            usleep(10_000)
        }
        return exitStatus
    }

    /// SIGTERM to its process group, at most `grace` to end, then SIGKILL; always reaped.
    @discardableResult
    func stop(grace: TimeInterval = 5) -> Int32? {
        guard !hasExited() else { return exitStatus }
        kill(-pid, SIGTERM)
        if let s = wait(timeout: grace) { kill(-pid, SIGKILL); return s }
        kill(-pid, SIGKILL)
        // SIGKILL cannot be caught; the bound only guards against a process
        // stuck in the kernel, which would then be left as a zombie.
        return wait(timeout: 10)
    }

    var out: String { String(decoding: FileManager.default.contents(atPath: stdoutPath) ?? Data(), as: UTF8.self) }
    var err: String { String(decoding: FileManager.default.contents(atPath: stderrPath) ?? Data(), as: UTF8.self) }

    /// Runs `argv` to its end, at most `timeout` (then it is stopped): status, stdout, stderr.
    static func run(_ argv: [String], env: [String: String] = [:], dir: TempDir, name: String, timeout: TimeInterval) throws -> (status: Int32?, out: String, err: String) {
        let p = try DaemonProcess(argv, env: env, dir: dir, name: name)
        let status = p.wait(timeout: timeout) ?? { p.stop(); return nil }()
        return (status, p.out, p.err)
    }
}
