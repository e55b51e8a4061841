import Foundation

/// A simulated household network made of Linux network namespaces: one per
/// device, each with an `eth0` whose other end is plugged into a bridge that
/// lives in a namespace of its own. Nothing here touches the host's own
/// interfaces, so multicast DNS and everything else stays inside. Every
/// namespace is removed (its processes killed first) when the lab goes away.
final class NetworkLab {
    static let ip = "/usr/sbin/ip"

    /// Why the lab cannot run here, or nil when it can (root and `ip netns`).
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "network namespace tests need root (run make test as root)" }
        guard FileManager.default.isExecutableFile(atPath: ip) else { return "network namespace tests need \(ip) (iproute2)" }
        let probe = "fsprobe\(getpid())"
        guard (try? NetworkLab.run([ip, "netns", "add", probe]))?.status == 0 else { return "cannot create a network namespace here (ip netns add failed)" }
        _ = try? NetworkLab.run([ip, "netns", "del", probe])
        return nil
    }()

    private nonisolated(unsafe) static var counter = 0
    let prefix: String
    let bridge: String
    let devices: [String]
    let subnet = "10.66.0"

    /// `count` devices on one bridge, device i at 10.66.0.(i+1)/24.
    init(devices count: Int) throws {
        NetworkLab.counter += 1
        let p = "fs\(getpid())n\(NetworkLab.counter)"
        prefix = p
        bridge = p + "br"
        devices = (0..<count).map { "\(p)d\($0)" }
        do {
            try sh(["netns", "add", bridge])
            try sh(["-n", bridge, "link", "add", "br0", "type", "bridge"])
            try sh(["-n", bridge, "link", "set", "br0", "up"])
            for (i, d) in devices.enumerated() {
                try sh(["netns", "add", d])
                try sh(["-n", d, "link", "set", "lo", "up"])
                try sh(["link", "add", "eth0", "netns", d, "type", "veth", "peer", "name", "port\(i)", "netns", bridge])
                try sh(["-n", bridge, "link", "set", "port\(i)", "master", "br0"])
                try sh(["-n", bridge, "link", "set", "port\(i)", "up"])
                try sh(["-n", d, "addr", "add", "\(address(i))/24", "dev", "eth0"])
                try sh(["-n", d, "link", "set", "eth0", "up"])
            }
        } catch {
            tearDown()
            throw error
        }
    }

    deinit { tearDown() }

    func address(_ i: Int) -> String { "\(subnet).\(i + 1)" }

    private func tearDown() {
        for ns in devices + [bridge] {
            if let r = try? NetworkLab.run([NetworkLab.ip, "netns", "pids", ns]) {
                for pid in r.out.split(separator: "\n").compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
            }
            _ = try? NetworkLab.run([NetworkLab.ip, "netns", "del", ns])
        }
    }

    /// Runs `ip ARGS`; a failure is thrown with what ip said.
    func sh(_ args: [String]) throws {
        let r = try NetworkLab.run([NetworkLab.ip] + args)
        guard r.status == 0 else { throw HarnessError("ip \(args.joined(separator: " ")): \(r.err)") }
    }

    static func run(_ argv: [String], timeout: TimeInterval = 30) throws -> ToolResult {
        try Tools.run(argv[0], Array(argv.dropFirst()), timeout: timeout)
    }

    /// The argument vector that runs `tool` inside device `i`'s namespace.
    func argv(_ i: Int, _ tool: String, _ args: [String]) -> [String] {
        ["netns", "exec", devices[i], Tools.path(tool)] + args
    }

    /// Runs a built tool on device `i` and waits for it.
    func run(_ i: Int, _ tool: String, _ args: [String], input: String? = nil, timeout: TimeInterval = 120) throws -> ToolResult {
        try Tools.run(NetworkLab.ip, argv(i, tool, args), stdin: input.map { Data($0.utf8) }, timeout: timeout)
    }

    /// Starts a built tool on device `i` in the background (`ip netns exec`
    /// execs it, so the process is the tool itself and takes signals as such).
    func start(_ i: Int, _ tool: String, _ args: [String], dir: TempDir, name: String) throws -> BackgroundRun {
        try BackgroundRun(NetworkLab.ip, argv(i, tool, args), dir: dir, name: name)
    }

    /// Moves device `i` to a new address, as a new DHCP lease would.
    func renumber(_ i: Int, to host: Int) throws -> String {
        let new = "\(subnet).\(host)"
        try sh(["-n", devices[i], "addr", "flush", "dev", "eth0"])
        try sh(["-n", devices[i], "addr", "add", "\(new)/24", "dev", "eth0"])
        return new
    }

    /// Unplugs or plugs back device `i`'s cable at the bridge: packets vanish, nobody is told.
    func setLink(_ i: Int, up: Bool) throws {
        try sh(["-n", bridge, "link", "set", "port\(i)", up ? "up" : "down"])
    }

    /// Plugs a second interface, `eth1` with address `cidr`, of device `i`
    /// into the same bridge (a second network on the same wire, say).
    func plugSecondInterface(_ i: Int, _ cidr: String) throws {
        try sh(["link", "add", "eth1", "netns", devices[i], "type", "veth", "peer", "name", "second\(i)", "netns", bridge])
        try sh(["-n", bridge, "link", "set", "second\(i)", "master", "br0"])
        try sh(["-n", bridge, "link", "set", "second\(i)", "up"])
        try sh(["-n", devices[i], "addr", "add", cidr, "dev", "eth1"])
        try sh(["-n", devices[i], "link", "set", "eth1", "up"])
    }

    /// Gives device `i` an IPv6 address as well (no duplicate detection, so
    /// it is usable at once); IPv6 is switched on in its namespace first.
    func addIPv6(_ i: Int, _ cidr: String) throws {
        try enableIPv6(i)
        try sh(["-n", devices[i], "-6", "addr", "add", cidr, "dev", "eth0", "nodad"])
    }

    /// Switches IPv6 on in device `i`'s namespace (a host may have it off by default).
    func enableIPv6(_ i: Int) throws {
        // /proc/sys/net as seen from inside the namespace is the namespace's own.
        for key in ["all", "eth0"] {
            let file = "/proc/sys/net/ipv6/conf/\(key)/disable_ipv6"
            let r = try NetworkLab.run([NetworkLab.ip, "netns", "exec", devices[i], "/bin/sh", "-c", "echo 0 > \(file)"])
            guard r.status == 0 else { throw HarnessError("\(file): \(r.err)") }
        }
    }

    /// Device `i`'s IPv6 link-local address, once it has one.
    func linkLocal(_ i: Int) throws -> String? {
        let r = try NetworkLab.run([NetworkLab.ip, "-n", devices[i], "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link"])
        return r.out.split(separator: " ").first { $0.hasPrefix("fe80:") }.map { String($0.split(separator: "/")[0]) }
    }

    /// Takes device `i`'s IPv4 address away: it is reachable over IPv6 only.
    func removeIPv4(_ i: Int) throws {
        try sh(["-n", devices[i], "-4", "addr", "flush", "dev", "eth0"])
    }

    /// Shapes what device `i` sends with a token bucket (this kernel has no netem).
    func shape(_ i: Int, rate: String) throws {
        try sh(["-n", devices[i], "link", "set", "eth0", "txqueuelen", "1000"])
        let r = try NetworkLab.run(["/usr/sbin/tc", "-n", devices[i], "qdisc", "replace", "dev", "eth0", "root", "tbf",
                                    "rate", rate, "burst", "32kb", "latency", "100ms"])
        guard r.status == 0 else { throw HarnessError("tc: \(r.err)") }
    }
}
