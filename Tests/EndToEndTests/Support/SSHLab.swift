import Foundation

/// A real OpenSSH server in a network namespace of its own, listening on the
/// namespace's loopback only, with throwaway host and user keys: the "home"
/// host a member reaches from a trip. `ssh home …` works inside the
/// namespace through a wrapper `ssh` first on PATH, which adds `-F` with a
/// config naming `home` (OpenSSH reads ~/.ssh/config from the password
/// database, not $HOME, so a test cannot point it elsewhere otherwise).
/// Sessions it starts get `env` (sshd's SetEnv): the tools on PATH and the
/// owner's per-user store under the lab's folder. Inside the namespace,
/// `home` also resolves to its loopback (ip-netns(8) puts
/// /etc/netns/NAME/hosts over /etc/hosts), for a member that connects to
/// the host by name. Removed with its processes when the value goes away.
final class SSHLab {
    static let sshd = "/usr/sbin/sshd"
    static let ssh = "/usr/bin/ssh"

    /// Why the lab cannot run here, or nil when it can.
    static let unavailableReason: String? = {
        if let r = NetworkLab.unavailableReason { return r }
        for p in [sshd, ssh, "/usr/bin/ssh-keygen"] where !FileManager.default.isExecutableFile(atPath: p) {
            return "\(p) is not installed (packages/apt-test.txt lists openssh-server and openssh-client)"
        }
        return nil
    }()

    let dir: TempDir
    let ns: String
    /// The folder whose `ssh` is the wrapper: first on PATH for what runs in the namespace.
    let shims: String
    private var daemon: DaemonProcess?

    init(dir: TempDir, env: [String: String]) throws {
        self.dir = dir
        ns = "fs-ssh-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        shims = dir.file("shims")
        try FileManager.default.createDirectory(atPath: shims, withIntermediateDirectories: true)
        guard try NetworkLab.run([NetworkLab.ip, "netns", "add", ns]).status == 0 else { throw HarnessError("ip netns add \(ns) failed") }
        do {
            guard try NetworkLab.run([NetworkLab.ip, "-n", ns, "link", "set", "lo", "up"]).status == 0 else { throw HarnessError("lo up failed") }
            try FileManager.default.createDirectory(atPath: "/etc/netns/\(ns)", withIntermediateDirectories: true)
            try "127.0.0.1 localhost home\n::1 localhost\n".write(toFile: "/etc/netns/\(ns)/hosts", atomically: true, encoding: .utf8)
            for key in ["host_key", "user_key"] {
                let r = try NetworkLab.run(["/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", dir.file(key)])
                guard r.status == 0 else { throw HarnessError("ssh-keygen: \(r.err)") }
            }
            try FileManager.default.copyItem(atPath: dir.file("user_key.pub"), toPath: dir.file("authorized_keys"))
            // sshd's privilege separation folder (Debian makes it at boot).
            try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
            let setEnv = env.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            _ = dir.write("sshd_config", """
            ListenAddress 127.0.0.1
            Port 2222
            HostKey \(dir.file("host_key"))
            AuthorizedKeysFile \(dir.file("authorized_keys"))
            PidFile \(dir.file("sshd.pid"))
            StrictModes no
            UsePAM no
            PermitRootLogin prohibit-password
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            SetEnv \(setEnv)

            """)
            _ = dir.write("ssh_config", """
            Host home
                HostName 127.0.0.1
                Port 2222
                User root
                IdentityFile \(dir.file("user_key"))
                IdentitiesOnly yes
                BatchMode yes
                StrictHostKeyChecking no
                UserKnownHostsFile /dev/null
                LogLevel ERROR

            """)
            let wrapper = dir.write("shims/ssh", "#!/bin/sh\nexec \(SSHLab.ssh) -F '\(dir.file("ssh_config"))' \"$@\"\n")
            chmod(wrapper, 0o755)
            daemon = try DaemonProcess([NetworkLab.ip, "netns", "exec", ns, SSHLab.sshd, "-D", "-e", "-f", dir.file("sshd_config")], dir: dir, name: "sshd")
            // Up once a login runs a command.
            var up = false
            for _ in 0..<200 {
                if try run("ssh home true", timeout: 10).status == 0 { up = true; break }
                if daemon?.hasExited() == true { break }
                usleep(50_000)
            }
            guard up else { throw HarnessError("sshd did not come up: \(daemon?.err ?? "")") }
        } catch {
            tearDown()
            throw error
        }
    }

    deinit { tearDown() }

    private func tearDown() {
        daemon?.stop()
        daemon = nil
        if let r = try? NetworkLab.run([NetworkLab.ip, "netns", "pids", ns]) {
            for pid in r.out.split(separator: "\n").compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
        }
        _ = try? NetworkLab.run([NetworkLab.ip, "netns", "delete", ns])
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(ns)")
    }

    /// A program running inside the namespace until the lab goes (or it is stopped).
    func start(_ argv: [String], name: String) throws -> DaemonProcess {
        try DaemonProcess([NetworkLab.ip, "netns", "exec", ns] + argv, dir: dir, name: name)
    }

    /// Runs a bash script inside the namespace, the wrapper and the tools first on PATH.
    func run(_ script: String, cwd: String? = nil, timeout: TimeInterval = 120) throws -> (status: Int32?, out: String, err: String) {
        let prelude = "export PATH='\(shims)':'\(Tools.binDir)':$PATH\nunset FAMILY_SYNC_DB\n" + (cwd.map { "cd '\($0)'\n" } ?? "")
        return try DaemonProcess.run([NetworkLab.ip, "netns", "exec", ns, "/bin/bash", "-e", "-o", "pipefail", "-c", prelude + script],
                                     dir: dir, name: "ssh-run-\(UInt32.random(in: 0...UInt32.max))", timeout: timeout)
    }
}
