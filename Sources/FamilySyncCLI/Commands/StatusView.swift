import FoundationEssentials
import Glibc
import FamilySync

/// The readable forms of `peer-sync status` and `pair-qr --list`, for a
/// terminal; scripts get the JSON (when stdout is not a terminal, or with
/// --json), as git status and --porcelain. Both are drawn from the same
/// JSON value, so the two never say different things.
public enum StatusView {
    /// `text` followed by spaces to `width` characters (cut to it when longer), for aligned columns.
    static func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }

    /// Whether to print JSON: asked for, or stdout is not a terminal.
    public static func wantsJSON(_ ctx: ToolContext, flag: some OptionName) -> Bool {
        ctx.args.flag(flag) || isatty(1) != 1
    }

    /// `peer-sync status` as lines for people.
    static func status(_ v: JSONValue) -> String {
        var out: [String] = []
        let me = v["device"]?.stringValue ?? ""
        guard let family = v["family"]?.stringValue else {
            out.append("this device (\(me)) belongs to no family yet: make an offer with 'pair-qr' (owner) or redeem one with 'peer-sync join'")
            return out.joined(separator: "\n") + "\n"
        }
        let role = v["role"]?.stringValue ?? ""
        let revoked = v["revoked"]?.boolValue == true
        out.append("family \(family): this device is \(role == "owner" ? "the owner" : "a member")\(revoked ? ", revoked (it syncs no more)" : "") (key epoch \(v["epoch"]?.int64Value ?? 0))")
        let devices = v["devices"]?.arrayValue ?? []
        out.append("devices: \(v["activeDevices"]?.int64Value ?? 0) of \(v["maxDevices"]?.int64Value ?? 0)")
        let nameWidth = devices.map { ($0["name"]?.stringValue ?? "(no name)").count }.max() ?? 0
        for d in devices {
            let name = d["name"]?.stringValue ?? "(no name)"
            var state: String
            if d["self"]?.boolValue == true {
                state = "this device"
            } else if let t = d["revokedAt"]?.stringValue {
                state = "revoked \(t)"
            } else if let t = d["lastSynced"]?.stringValue {
                state = "last synced \(t)"
            } else {
                state = "never synced"
            }
            let role = d["role"]?.stringValue ?? ""
            out.append("  \(d["device"]?.stringValue ?? "")  \(StatusView.padded(name, to: nameWidth))  \(StatusView.padded(role, to: 6))  \(state)")
        }
        out.append("proof: " + proof(v["proof"]))
        let photos = v["photos"]
        let wanted = photos?["wanted"]?.int64Value ?? 0
        out.append("records: \(v["records"]?.int64Value ?? 0); photos: \(photos?["held"]?.int64Value ?? 0) held, \(wanted) wanted from peers")
        if let gc = v["gc"], let held = gc["keptUnacknowledged"]?.int64Value, held > 0 {
            let who = (gc["heldBackBy"]?.arrayValue ?? []).map { d in
                "\(d["deviceId"]?.stringValue ?? "")\(d["name"]?.stringValue.map { " (\($0))" } ?? "") "
                    + (d["lastSyncedAt"]?.stringValue.map { "last synced \($0)" } ?? "never synced")
            }
            out.append("tombstones: \(held) old enough but kept until " + (who.isEmpty ? "every device has them" : who.joined(separator: ", ") + " has them"))
        }
        return out.joined(separator: "\n") + "\n"
    }

    static func proof(_ p: JSONValue?) -> String {
        guard let p else { return "unknown" }
        if p["entitled"]?.boolValue == true {
            let until = p["until"]?.stringValue.map { "until \($0)" } ?? "with no end"
            let source = p["source"]?.stringValue.map { $0 == "local" ? "this device's purchase" : "from \($0.replacing("peer:", with: ""))" } ?? ""
            return "premium \(until)\(source.isEmpty ? "" : " (\(source))")"
        }
        let reason = p["reason"]?.stringValue ?? "no-proof"
        return "free (\(reason)\(p["detail"]?.stringValue.map { ": \($0)" } ?? ""))"
    }

    /// `pair-qr --list` as lines for people: one offer each, or a word that there is none.
    public static func offers(_ offers: [PairingOffer]) -> String {
        guard !offers.isEmpty else { return "no open offers\n" }
        return offers.map { o in
            "\(o.nonce)  until \(o.expiresAt.rfc3339)" + (o.address.map { "  at \($0)" } ?? "")
        }.joined(separator: "\n") + "\n"
    }
}
