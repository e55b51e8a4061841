import Foundation
import Testing
import FamilySync

/// serve beside a real avahi-daemon on one device, both on port 5353: serve
/// still advertises and answers, and `avahi-browse` sees the service over
/// IPv4 and IPv6 with the right TXT and no ID. avahi-daemon needs D-Bus: the
/// test runs a private dbus-daemon (its own config and socket in the test's
/// folder) and the daemon in the device's namespace, with a private /run, as
/// root without chroot or rlimits, so nothing of the host's is touched.
/// Skipped, with the reason, where avahi is not installed.
enum Avahi {
    static let daemon = "/usr/sbin/avahi-daemon", browse = "/usr/bin/avahi-browse", dbusDaemon = "/usr/bin/dbus-daemon"

    static let unavailableReason: String? = {
        if let r = NetworkLab.unavailableReason { return r }
        for tool in [daemon, browse, dbusDaemon] where !FileManager.default.isExecutableFile(atPath: tool) {
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
    static func resolved(_ lab: NetworkLab, bus: String) throws -> [[String]] {
        let r = try NetworkLab.run([NetworkLab.ip, "netns", "exec", lab.devices[0], "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(bus)",
                                    Avahi.browse, "-rpt", "_family-sync._tcp"], timeout: 20)
        return r.out.split(separator: "\n").filter { $0.hasPrefix("=;") }.map { $0.split(separator: ";", omittingEmptySubsequences: false).map(String.init) }
    }

    @Test func serveAndAvahiDaemonShareTheDeviceAndAvahiBrowseSeesTheService() throws {
        let lab = try NetworkLab(devices: 2)
        let dir = TempDir()
        let bus = dir.file("bus.sock")
        let busConf = dir.write("bus.conf", Self.busConfig(socket: bus))
        let avahiConf = dir.write("avahi.conf", Self.avahiConfig)
        let dbus = try BackgroundRun(NetworkLab.ip, ["netns", "exec", lab.devices[0], Avahi.dbusDaemon, "--config-file=\(busConf)", "--nofork", "--nopidfile"],
                                     dir: dir, name: "dbus")
        try HouseholdNetworkTests.waitFor("the private D-Bus socket") { FileManager.default.fileExists(atPath: bus) }
        // The pid file and socket avahi keeps in /run/avahi-daemon go to a
        // tmpfs of the namespace's own mount table (ip netns exec gives each
        // command one, whose mounts do not reach the host).
        let avahi = try BackgroundRun(NetworkLab.ip, ["netns", "exec", lab.devices[0], "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(bus)", "/bin/sh", "-c",
                                                      "mount -t tmpfs tmpfs /run && mkdir -p /run/avahi-daemon && exec \(Avahi.daemon) --no-drop-root --no-chroot --no-rlimits --debug -f \(avahiConf)"],
                                      dir: dir, name: "avahi")
        defer { kill(avahi.pid, SIGTERM); _ = avahi.wait(timeout: 10); kill(dbus.pid, SIGTERM); _ = dbus.wait(timeout: 10) }
        try HouseholdNetworkTests.waitFor("avahi-daemon to start") { avahi.err.contains("Server startup complete") || !avahi.process.isRunning }
        #expect(avahi.process.isRunning, "\(avahi.err)")

        // serve on "::" beside it: both bind 5353.
        let (owner, offers, serve) = try HouseholdNetworkTests.ownerServing(lab, dir: dir, offers: 1, serveArgs: ["--listen", "[::]:\(SyncLimits.defaultPort)"])
        try HouseholdNetworkTests.waitFor("serve to advertise") { serve.err.contains("advertising _family-sync._tcp on eth0") }
        let ownerLL = try #require(try lab.linkLocal(0))

        // serve still answers: a member joins by the offer and finds the owner by browsing.
        let kid = dir.file("kid.db")
        let j = try lab.run(1, "peer-sync", ["join", "--db", kid], input: offers[0]["qr"]!.stringValue! + "\n")
        #expect(j.status == 0, "\(j.err)")
        let d = try lab.run(1, "peer-sync", ["discover", "--db", kid])
        #expect(d.status == 0, "\(d.err)")
        #expect(d.json?["devices"]?.arrayValue?.first?["device"]?.stringValue == (try Household.device(owner)), "\(d.out)")

        // avahi-browse, through the daemon beside serve, resolves it over both families.
        var lines: [[String]] = []
        try HouseholdNetworkTests.waitFor("avahi-browse to resolve the service over IPv4 and IPv6", timeout: 30) {
            lines = try Self.resolved(lab, bus: bus)
            return Set(lines.compactMap { $0.count > 2 ? $0[2] : nil }) == ["IPv4", "IPv6"]
        }
        let store = try Store(path: owner)
        for l in lines {
            #expect(l.count >= 10, "\(l)")
            guard l.count >= 10 else { continue }
            #expect(l[1] == "eth0")
            #expect(l[8] == "\(SyncLimits.defaultPort)")
            #expect(l[7] == (l[2] == "IPv4" ? lab.address(0) : ownerLL), "\(l)")
            #expect(l[9].contains("\"v=\(SyncProtocol.version)\""), "\(l)")
            // No family or device ID in the name, the host or the TXT, whole or in part.
            let visible = ([l[3], l[6]] + l[9...]).joined(separator: " ").lowercased()
            for id in [try store.family()!.id, try store.deviceID] {
                #expect(!visible.contains(id.lowercased().replacingOccurrences(of: "-", with: "")))
                for part in id.lowercased().split(separator: "-") where part.count >= 8 { #expect(!visible.contains(part), "\(l)") }
            }
        }
        // Neither took the other's names: avahi kept its host name, serve its tag.
        #expect(!avahi.err.contains("Host name conflict"), "\(avahi.err)")
        #expect(!serve.err.contains("taken on the network"), "\(serve.err)")

        // serve's goodbye reaches avahi: the service is gone from its cache.
        kill(serve.pid, SIGTERM)
        #expect(serve.wait(timeout: 20) == 0)
        try HouseholdNetworkTests.waitFor("avahi to drop the service") { try Self.resolved(lab, bus: bus).isEmpty }
    }
}
