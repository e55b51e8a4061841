import FamilySync
/// Draws a QR code with its quiet zone: as pixels (for PNG), SVG, Unicode
/// half blocks for a terminal, or plain text.
public struct QRRenderer: Sendable {
    /// The quiet zone the QR standard asks for, in modules.
    public static let defaultMargin = 4
    /// Pixels (PNG) or user units (SVG) per module.
    public static let defaultModuleSize = 8
    public static let moduleSizeRange = 1...64
    public static let marginRange = 0...64

    public var code: QRCode
    public var margin: Int
    public var moduleSize: Int

    public init(code: QRCode, margin: Int = QRRenderer.defaultMargin, moduleSize: Int = QRRenderer.defaultModuleSize) {
        self.code = code
        self.margin = margin
        self.moduleSize = moduleSize
    }

    /// Modules per side including the quiet zone.
    public var sideModules: Int { code.size + 2 * margin }

    /// Whether the module at (x, y), counted from the quiet zone's corner, is dark.
    @inline(__always) func dark(_ x: Int, _ y: Int) -> Bool {
        let cx = x - margin, cy = y - margin
        guard cx >= 0, cy >= 0, cx < code.size, cy < code.size else { return false }
        return code[cx, cy]
    }

    /// Black modules on white, `moduleSize` pixels each.
    public func raster() -> GrayImage {
        let side = sideModules * moduleSize
        var img = GrayImage(width: side, height: side, fill: 255)
        for my in 0..<sideModules {
            for mx in 0..<sideModules where dark(mx, my) {
                for y in (my * moduleSize)..<((my + 1) * moduleSize) {
                    let row = y * side
                    for x in (mx * moduleSize)..<((mx + 1) * moduleSize) { img.pixels[row + x] = 0 }
                }
            }
        }
        return img
    }

    public func png() throws -> [UInt8] { try PNGCodec.encode(raster()) }

    /// An SVG with a white background and one path of dark rectangles (one per
    /// horizontal run), crisp at any zoom.
    public func svg() -> String {
        let side = sideModules
        let px = side * moduleSize
        var d = ""
        for y in 0..<side {
            var x = 0
            while x < side {
                guard dark(x, y) else { x += 1; continue }
                var run = 1
                while x + run < side, dark(x + run, y) { run += 1 }
                d += "M\(x) \(y)h\(run)v1h-\(run)z"
                x += run
            }
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(px)" height="\(px)" viewBox="0 0 \(side) \(side)" shape-rendering="crispEdges">
            <rect x="0" y="0" width="\(side)" height="\(side)" fill="#ffffff"/>
            <path fill="#000000" d="\(d)"/>
            </svg>

            """
    }

    /// Unicode half blocks, two module rows per line, the quiet zone drawn.
    /// With `colour` (for a terminal), black on white is set explicitly (SGR
    /// 30;107) so the code reads the same on dark and light terminals, and
    /// each line resets its colours. Without it (a file or a pipe) there are no
    /// escapes at all: a block is ink, so a dark module is drawn as ink and the
    /// code scans as printed, dark on light.
    public func terminal(colour: Bool = true) -> String {
        let side = sideModules
        var out = ""
        var y = 0
        while y < side {
            if colour { out += "\u{1B}[30;107m" }
            for x in 0..<side {
                let top = dark(x, y), bottom = y + 1 < side ? dark(x, y + 1) : false
                switch (top, bottom) {
                case (false, false): out += " "
                case (true, false): out += "\u{2580}"
                case (false, true): out += "\u{2584}"
                case (true, true): out += "\u{2588}"
                }
            }
            out += colour ? "\u{1B}[0m\n" : "\n"
            y += 2
        }
        return out
    }

    /// Plain ASCII: two characters a module, `##` dark and two spaces light,
    /// one line per module row, quiet zone included.
    public func text() -> String {
        let side = sideModules
        var out = ""
        out.reserveCapacity(side * (2 * side + 1))
        for y in 0..<side {
            for x in 0..<side { out += dark(x, y) ? "##" : "  " }
            out += "\n"
        }
        return out
    }
}
