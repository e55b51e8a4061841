import FoundationEssentials
import Glibc
import FamilySync

public enum PairQRCommand {
    static let formats = ["png", "svg", "terminal", "text"]

    public static let spec = CommandSpec(
        name: "pair-qr",
        abstract: "Make a one-time pairing offer and draw it as a QR code",
        discussion: """
            pair-qr registers a fresh one-time pairing offer in the owner's store and prints it as one line of JSON on standard output: family (the family UUID), nonce (160 bits from the kernel's random generator, in base32), expiresAt, addr (the owner's HOST:PORT: --addr, else where this store's peer-sync serve listens, else this host's primary address on port 7433) and qr (the exact text in the code). On a store that has no family yet, it first creates one, with this device as its owner.

            The code carries about 100 characters of upper-case ASCII in QR's alphanumeric mode, never more than 120: FS1/FAMILY/NONCE/EXPIRES/HOST:PORT, where FS1 is the format version and EXPIRES is in Unix seconds. It grants nothing by itself: a device redeems it with peer-sync join, in a live handshake with the owner's device, while the offer is open, and only once. Every call makes a new nonce; offers are never reused.

            The code is drawn as a PNG (-o FILE, written whole or not at all), an SVG, plain text (## for a dark module), or, without -o, with Unicode half blocks on standard error, so standard output stays JSON. The terminal drawing includes the quiet zone; on a terminal it sets black on white explicitly, so a phone reads it off a dark or a light terminal, and to a file or pipe it writes plain half blocks with no escapes, a block for each dark module, which scan as printed.

            --list prints the open offers, one JSON line each; --close NONCE, or --close all, ends offers early, as when the pairing sheet is closed. A member's store makes no offers: pair-qr says so and exits 77, changing nothing.
            """,
        options: [
            OptionSpec("db", valueName: "PATH",
                       help: "The owner's store. Drawing an offer creates a missing one (standard error says created a new store at PATH); --list and --close need it to exist (status 66).",
                       default: CommonOptions.db.defaultValue, completion: .file),
            OptionSpec("ttl", valueName: "DURATION", help: "How long the offer stays open (at most 1d).", default: "10m"),
            OptionSpec("addr", valueName: "HOST:PORT", help: "The address members reach this device at, carried in the code (an IPv6 host without brackets).",
                       default: "where this store's peer-sync serve listens, else this host's primary address on port 7433"),
            OptionSpec("output", short: "o", valueName: "FILE", help: "Write the code to FILE; its format comes from --format, else from FILE's extension (.png, .svg, .txt; another is a usage error), else PNG. A regular FILE is replaced atomically, a symbolic link's target is replaced, a FIFO or character device is written straight through.", completion: .file),
            OptionSpec("format", valueName: "FORMAT", help: "How to draw the code: png or svg (need -o), text (to FILE, or stderr), terminal (stderr).",
                       default: "terminal, or from FILE", completion: .values(formats)),
            OptionSpec("size", valueName: "N", help: "Pixels (PNG) or SVG units per module, 1 to 64.", default: "8"),
            OptionSpec("margin", valueName: "N", help: "The quiet zone around the code, in modules, 0 to 64.", default: "4"),
            OptionSpec("level", valueName: "LEVEL", help: "Error correction: L 7%, M 15%, Q 25%, H 30% of the code may be damaged.", default: "M",
                       completion: .values(QRErrorCorrection.allCases.map(\.rawValue))),
            .flag("list", help: "Print the open offers and make none: on a terminal one line each (nonce, until, address), else (or with --json) one JSON line each."),
            .flag("json", help: "With --list, JSON lines even on a terminal."),
            OptionSpec("close", valueName: "NONCE", help: "End the open offer NONCE, or every open offer with 'all'; prints {\"closed\":N}."),
            CommonOptions.now, CommonOptions.quiet,
        ],
        examples: [
            Example("Make an offer and save its code as a PNG to print or show on a tablet:", "pair-qr --db owner.db --addr 192.168.1.20:7433 -o pair.png"),
            Example("Show the code in the terminal (on standard error) and keep the offer JSON:", "pair-qr --db owner.db > offer.json"),
            Example("An SVG with a high error-correction level and a wide margin:", "pair-qr --db owner.db --level H --margin 6 -o pair.svg"),
            Example("On the new device, scan a photo of the code and join:", "pair-scan photo.jpg | peer-sync join --db kid.db"),
            Example("Close every open offer when the pairing sheet is put away:", "pair-qr --db owner.db --close all"),
        ],
        seeAlso: AllTools.seeAlso(except: "pair-qr")
    )
}

extension PairQRCommand {
    /// This tool's options, one case each (see `OptionName`).
    public enum Option: String, OptionName {
        case addr
        case close
        case db
        case format
        case level
        case json
        case list
        case margin
        case now
        case output
        case quiet
        case size
        case ttl
    }
}
