import Foundation

/// One device's disk on the power-cut file system (Support/powercut_fs.py):
/// a FUSE mount whose writes stay in memory until fsync. `cut()` is the
/// power going (the file system process is killed, the mount dropped);
/// `mount()` again is the reboot, with only what was synced. The store is
/// `store` in the mount.
final class PowerCutDisk {
    /// The Python with mfusepy: make test's venv, else the system's.
    static let python: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
        let venv = root + "/.build/test-venv/bin/python3"
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : "/usr/bin/python3"
    }()
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/powercut_fs.py"
    static let fusermount = "/usr/bin/fusermount3"

    /// Why these tests cannot run here, or nil when they can.
    static let unavailableReason: String? = {
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else { return "power-cut tests need /dev/fuse (FUSE), which this machine lacks" }
        guard FileManager.default.isExecutableFile(atPath: fusermount) else { return "power-cut tests need \(fusermount) (Debian package fuse3)" }
        guard (try? NetworkLab.run([python, "-c", "import mfusepy"]))?.status == 0 else {
            return "power-cut tests need the Python package mfusepy (packages/pip-test.txt) in \(python)"
        }
        // A probe mount: a container may have /dev/fuse and still refuse to mount.
        let dir = TempDir()
        guard let probe = try? PowerCutDisk(dir: dir, name: "probe") else { return "cannot mount a FUSE file system here" }
        probe.unmount()
        return nil
    }()

    let disk: String
    let mountpoint: String
    private let dir: TempDir
    private let name: String
    private var fs: DaemonProcess?

    /// The store's path on this disk.
    var store: String { mountpoint + "/store.db" }

    init(dir: TempDir, name: String) throws {
        self.dir = dir
        self.name = name
        disk = dir.file("\(name).disk")
        mountpoint = dir.file(name)
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        try mount()
    }

    deinit { unmount() }

    /// Mounts the disk as it was last synced; with `cutAtFsync` or
    /// `cutAtWrite` the power goes at that fsync or write of the store or its
    /// log; with `failingFsync` every fsync of them fails (EIO). With
    /// `countingFromArm`, fsyncs and writes count only from `arm()` on.
    func mount(cutAtFsync: Int? = nil, cutAtWrite: Int? = nil, failingFsync: Bool = false, countingFromArm: Bool = false) throws {
        try? FileManager.default.removeItem(atPath: disk + "/cut.json")
        var argv = [Self.python, Self.script, disk, mountpoint, "--count", "store.db", "--count", "store.db-wal"]
        if let k = cutAtFsync { argv += ["--cut-at-fsync", String(k)] }
        if let k = cutAtWrite { argv += ["--cut-at-write", String(k)] }
        if failingFsync { argv.append("--fail-fsync") }
        if countingFromArm { argv.append("--count-after-sigusr1") }
        let p = try DaemonProcess(argv, dir: dir, name: "\(name).fs")
        fs = p
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if isMounted { return }
            if p.hasExited() { break }
            usleep(20_000)
        }
        let why = (try? String(contentsOfFile: p.stderrPath, encoding: .utf8)) ?? ""
        unmount()
        throw HarnessError("the power-cut file system did not mount: \(why)")
    }

    /// Whether the mount point is a mount (another device than its folder's).
    var isMounted: Bool {
        var a = stat(), b = stat()
        return stat(mountpoint, &a) == 0 && stat(dir.path, &b) == 0 && a.st_dev != b.st_dev
    }

    /// Starts counting fsyncs and writes (see `mount`): they count from the
    /// file system's next request on.
    func arm() {
        if let fs { kill(fs.pid, SIGUSR1) }
    }

    /// The power goes: everything not synced is gone.
    func cut() {
        if let fs { kill(fs.pid, SIGKILL); _ = fs.wait(timeout: 10) }
        fs = nil
        detach()
    }

    /// A clean unmount (what was not synced is lost all the same).
    func unmount() {
        guard let fs else { return }
        _ = fs.stop()
        self.fs = nil
        detach()
    }

    private func detach() {
        _ = try? NetworkLab.run([Self.fusermount, "-u", "-z", mountpoint])
    }

    /// Whether the power went at the fsync or write asked for.
    var wasCut: Bool { FileManager.default.fileExists(atPath: disk + "/cut.json") }
    /// The store's fsyncs and writes seen by the last mount, once unmounted cleanly.
    var counts: (fsyncs: Int, writes: Int)? {
        guard let d = FileManager.default.contents(atPath: disk + "/counts.json"),
              let j = try? JSONSerialization.jsonObject(with: d) as? [String: Int] else { return nil }
        return (j["fsyncs"] ?? 0, j["writes"] ?? 0)
    }
}
