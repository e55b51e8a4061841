import FoundationEssentials
import Glibc

/// One line of progress on a terminal that never wraps: each redraw is cut
/// to the terminal's width (asked again every time, so a resized window is
/// followed), written after a carriage return and followed by "erase to end
/// of line", so a shorter text leaves no tail and clearing leaves nothing.
/// A line that wrapped could not be cleared this way: `\r` goes back only to
/// the start of its last row.
final class ProgressLine {
    private let fd: Int32
    private var shown = false

    /// Used when the terminal does not say its width.
    static let fallbackColumns = 80

    init(fd: Int32) { self.fd = fd }

    /// The terminal's width in columns.
    var columns: Int {
        var ws = winsize()
        if ioctl(fd, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0 { return Int(ws.ws_col) }
        if let c = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), c > 0 { return c }
        return Self.fallbackColumns
    }

    /// `text` cut to fit `width - 1` columns (the last column is left free:
    /// some terminals wrap as soon as it is written), with "…" where it was cut.
    static func fit(_ text: String, width: Int) -> String {
        let room = max(2, width - 1)
        if text.reduce(0, { $0 + displayWidth($1) }) <= room { return text }
        var out = "", used = 0
        for c in text {
            let w = displayWidth(c)
            if used + w + 1 > room { break }
            out.append(c)
            used += w
        }
        return out + "…"
    }

    /// Columns a character takes: 2 for East Asian wide and emoji, 0 for
    /// controls, else 1.
    static func displayWidth(_ c: Character) -> Int {
        guard let s = c.unicodeScalars.first else { return 0 }
        let v = s.value
        if v < 0x20 || (0x7F..<0xA0).contains(v) { return 0 }
        if (0x1100...0x115F).contains(v) || (0x2E80...0xA4CF).contains(v) || (0xAC00...0xD7A3).contains(v)
            || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v) || (0xFF00...0xFF60).contains(v)
            || (0xFFE0...0xFFE6).contains(v) || (0x1F300...0x1FAFF).contains(v) || (0x20000...0x3FFFD).contains(v) { return 2 }
        return 1
    }

    func show(_ text: String) {
        // Control characters (a peer's name, a file name) would move the cursor.
        let clean = String(text.map { $0.isNewline || Self.displayWidth($0) == 0 ? " " : $0 })
        write("\r" + Self.fit(clean, width: columns) + "\u{1B}[K")
        shown = true
    }

    func clear() {
        guard shown else { return }
        write("\r\u{1B}[K")
        shown = false
    }

    /// A line that stays: the progress line is cleared, the text written
    /// whole with its newline (it may wrap: it is never redrawn).
    func log(_ text: String) {
        clear()
        write(text + "\n")
    }

    private func write(_ s: String) {
        var s = s
        s.withUTF8 { b in
            var off = 0
            while off < b.count {
                // Never nil: the loop runs only while the text has bytes.
                let n = Glibc.write(fd, b.baseAddress! + off, b.count - off)
                if n < 0 { if errno == EINTR { continue }; return }
                off += n
            }
        }
    }
}
