import Foundation
import Testing
import FamilySync

/// serve beside a real avahi-daemon on one device, both on port 5353: serve
/// still advertises and answers (a member joins, discovers and syncs), and
/// `avahi-browse` sees the service over IPv4 and IPv6 with the right TXT and
/// no ID; neither takes the other's names (the host's own name is both's).
/// avahi-daemon needs D-Bus: the test runs a private dbus-daemon (its own
/// config and socket in the test's folder) and the daemon in the device's
/// namespace, talking on its eth0 only, with a private /run, as root without
/// chroot or rlimits, so nothing of the host's is touched. The daemons and
/// avahi's tools run as `DaemonProcess`es (no inherited descriptors, their
/// own process group, bounded waits, always reaped). Skipped, with the
/// reason, where avahi is not installed.
enum Avahi {
    static let daemon = "/usr/sbin/avahi-daemon", browse = "/usr/bin/avahi-browse", resolve = "/usr/bin/avahi-resolve", dbusDaemon = "/usr/bin/dbus-daemon"

    static let unavailableReason: String? = {
        if let r = NetworkLab.unavailableReason { return r }
        for tool in [daemon, browse, resolve, dbusDaemon] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is not installed (make test-deps installs avahi-daemon, avahi-utils and dbus-daemon)"
        }
        return nil
    }()
}

@Suite(.serialized, .disabled(if: Avahi.unavailableReason != nil, Comment(rawValue: Avahi.unavailableReason ?? "")))
struct AvahiCoexistenceTests {
    /// A system bus of the test's own: anyone may own and call anything on it.
    static func busConfig(socket: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <allow own="*"/>
            <allow send_destination="*"/>
            <allow receive_sender="*"/>
          </policy>
        </busconfig>
        """
    }

    /// avahi on eth0 only, both families, publishing nothing but its host name.
    static let avahiConfig = """
        [server]
        use-ipv4=yes
        use-ipv6=yes
        allow-interfaces=eth0
        enable-dbus=yes
        [wide-area]
        enable-wide-area=no
        [publish]
        publish-hinfo=no
        publish-workstation=no
        """

    /// `avahi-browse -rpt` lines for resolved services ("=;eth0;IPv4;NAME;TYPE;local;HOST;ADDR;PORT;TXT").
    static func resolved(_ lab: NetworkLab, bus: String, dir: TempDir) throws -> [[String]] {
        let r = try DaemonProcess.run([NetworkLab.ip, "netns", "exec", lab.devices[0], Avahi.browse, "-rpt", "_family-sync._tcp"],
                                      env: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(bus)"], dir: dir, name: "avahi-browse", timeout: 20)
        guard r.status == 0 else { throw HarnessError("avahi-browse: status \(r.status.map(String.init) ?? "none, stopped after 20 s"): \(r.err)") }
        return r.out.split(separator: "\n").filter { $0.hasPrefix("=;") }.map { $0.split(separator: ";", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Words in what avahi-daemon logs when someone else holds a name it
    /// wants ("Host name conflict, retrying with ...").
    static let avahiConflictWords = ["conflict", "collision"]

    @Test func serveAndAvahiDaemonShareTheDeviceAndAvahiBrowseSeesTheService() throws {
        let lab = try NetworkLab(devices: 2)
        try lab.enableIPv6(0)
        try lab.enableIPv6(1)
        let dir = TempDir()
        let bus = dir.file("bus.sock")
        let busConf = dir.write("bus.conf", Self.busConfig(socket: bus))
        let avahiConf = dir.write("avahi.conf", Self.avahiConfig)
        let busEnv = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(bus)"]
        // Both daemons are stopped (group SIGTERM, then SIGKILL) and reaped
        // however the test ends; avahi first, while its bus is still there.
        var daemons: [DaemonProcess] = []
        defer { for d in daemons.reversed() { d.stop() } }
        let dbus = try DaemonProcess([NetworkLab.ip, "netns", "exec", lab.devices[0], Avahi.dbusDaemon, "--config-file=\(busConf)",
                                      "--nofork", "--nopidfile", "--print-address=1"], dir: dir, name: "dbus")
        daemons.append(dbus)
        // dbus-daemon prints its address once it listens.
        try HouseholdNetworkTests.waitFor("the private D-Bus to listen", timeout: 30) {
            if dbus.hasExited() { throw HarnessError("dbus-daemon exited (\(dbus.exitStatus ?? -1)): \(dbus.err)") }
            return dbus.out.contains("unix:path=") && FileManager.default.fileExists(atPath: bus)
        }
        // The pid file and socket avahi keeps in /run/avahi-daemon go to a
        // tmpfs of the namespace's own mount table (ip netns exec gives each
        // command one, whose mounts do not reach the host). avahi talks on
        // eth0 only, which is plugged into the lab's bridge.
        let avahi = try DaemonProcess([NetworkLab.ip, "netns", "exec", lab.devices[0], "/bin/sh", "-c",
                                       "mount -t tmpfs tmpfs /run && mkdir -p /run/avahi-daemon && exec \(Avahi.daemon) --no-drop-root --no-chroot --no-rlimits --debug -f \(avahiConf)"],
                                      env: busEnv, dir: dir, name: "avahi")
        daemons.append(avahi)
        try HouseholdNetworkTests.waitFor("avahi-daemon to claim its host name", timeout: 30) {
            if avahi.hasExited() { throw HarnessError("avahi-daemon exited (\(avahi.exitStatus ?? -1)): \(avahi.err)") }
            return avahi.err.contains("Server startup complete")
        }

        // serve on "::" beside it: both bind 5353.
        let (owner, offers, serve) = try HouseholdNetworkTests.ownerServing(lab, dir: dir, offers: 1, serveArgs: ["--listen", "[::]:\(SyncLimits.defaultPort)"])
        defer { if serve.process.isRunning { kill(serve.pid, SIGKILL) } }
        try HouseholdNetworkTests.waitFor("serve to advertise") { serve.err.contains("advertising _family-sync._tcp on eth0") }
        var ownerLL: String?
        try HouseholdNetworkTests.waitFor("the owner's IPv6 link-local address") { ownerLL = try lab.linkLocal(0); return ownerLL != nil }

        // serve still answers with avahi beside it: a member joins by the
        // offer and finds the owner by browsing.
        let kid = dir.file("kid.db")
        let j = try lab.run(1, "peer-sync", ["join", "--db", kid], input: offers[0]["qr"]!.stringValue! + "\n", timeout: 60)
        #expect(j.status == 0, "\(j.err)")
        let d = try lab.run(1, "peer-sync", ["discover", "--db", kid], timeout: 60)
        #expect(d.status == 0, "\(d.err)")
        #expect(d.json?["devices"]?.arrayValue?.first?["device"]?.stringValue == (try Household.device(owner)), "\(d.out)")

        // avahi-browse, through the daemon beside serve, resolves it over both families.
        var lines: [[String]] = []
        try HouseholdNetworkTests.waitFor("avahi-browse to resolve the service over IPv4 and IPv6", timeout: 30) {
            lines = try Self.resolved(lab, bus: bus, dir: dir)
            return Set(lines.compactMap { $0.count > 2 ? $0[2] : nil }) == ["IPv4", "IPv6"]
        }
        let store = try Store(path: owner)
        let ids = [try store.family()!.id, try store.deviceID]
        for l in lines {
            #expect(l.count >= 10, "\(l)")
            guard l.count >= 10 else { continue }
            #expect(l[1] == "eth0")
            #expect(l[8] == "\(SyncLimits.defaultPort)")
            // The column after the host is the address avahi resolved it to,
            // of either family whichever family the service was seen over.
            #expect([lab.address(0), ownerLL].contains(l[7]), "\(l)")
            // The TXT is the protocol version alone, the same for every device of every family (§12a).
            #expect(l[9] == "\"v=\(SyncProtocol.version)\"", "\(l)")
            // No family or device ID in the name, the host or the TXT, whole or in part.
            let visible = ([l[3], l[6]] + l[9...]).joined(separator: " ").lowercased()
            for id in ids {
                #expect(!visible.contains(id.lowercased().replacingOccurrences(of: "-", with: "")), "\(l)")
                for part in id.lowercased().split(separator: "-") where part.count >= 8 { #expect(!visible.contains(part), "\(l)") }
            }
        }

        // serve's AAAA answer, through avahi's resolver: the link-local address.
        let host = try #require(lines.first?[6])
        let aaaa = try DaemonProcess.run([NetworkLab.ip, "netns", "exec", lab.devices[0], Avahi.resolve, "-6", "-n", host],
                                         env: busEnv, dir: dir, name: "avahi-resolve", timeout: 20)
        #expect(aaaa.status == 0, "\(aaaa.err)")
        #expect(aaaa.out.split(whereSeparator: \.isWhitespace).map(String.init) == [host, ownerLL ?? "none"], "\(aaaa.out)")

        // Sync Now (no address) still finds the owner while avahi runs.
        let c = try lab.run(1, "peer-sync", ["connect", "--db", kid], timeout: 60)
        #expect(c.status == 0, "\(c.err)")

        // Neither took the other's names: avahi kept its host name, serve its tag.
        for word in Self.avahiConflictWords { #expect(!avahi.err.lowercased().contains(word), "\(avahi.err)") }
        #expect(!serve.err.contains("taken on the network"), "\(serve.err)")
        #expect(!avahi.hasExited(), "\(avahi.err)")

        // serve's goodbye reaches avahi: the service is gone from its cache.
        kill(serve.pid, SIGTERM)
        #expect(serve.wait(timeout: 20) == 143)
        try HouseholdNetworkTests.waitFor("avahi to drop the service", timeout: 30) { try Self.resolved(lab, bus: bus, dir: dir).isEmpty }
    }
}
