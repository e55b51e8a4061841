import FamilySync

/// A point in an image, in pixels from its top-left corner.
public struct ImagePoint: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) { self.x = x; self.y = y }
}

/// One QR code read from an image: what it says and where it is.
public struct ScannedCode: Sendable, Equatable {
    /// The code's text, always valid UTF-8 (see `QRText`).
    public var text: String
    /// How the character set of its byte-mode data was decided.
    public var charset: QRCharsetChoice
    /// Texts that other reads of this same code gave (another engine, or
    /// another step of the ladder): empty when every read agreed.
    public var disagreeing: [String] = []
    /// The bytes of its segments, exactly as coded, end to end.
    public var bytes: [UInt8]
    /// The parsed bitstream (modes, ECIs, version); nil when zbar read the
    /// code, which hands over only its bytes.
    public var stream: QRBitstream?
    /// The symbol's corners in the scanned image: top-left, top-right,
    /// bottom-right, bottom-left as the code is drawn (so a mirrored or
    /// rotated code's corners say how it lies).
    public var corners: [ImagePoint]
    /// A joined structured-append sequence's symbols, in index order (see
    /// `QRSequence`); empty for a code that stands alone.
    public var parts: [ScannedCode] = []
    /// A part of a structured-append sequence as zbar hands it over: its
    /// bytes without the header that says which part of which sequence.
    var isUnheadedPart = false

    init(stream: QRBitstream, corners: [ImagePoint]) {
        self.stream = stream
        self.bytes = stream.bytes
        (self.text, self.charset) = QRText.decode(stream)
        self.corners = corners
    }

    init(zbarBytes: [UInt8], corners: [ImagePoint]) {
        self.stream = nil
        self.bytes = zbarBytes
        (self.text, self.charset) = QRText.decode(zbarBytes: zbarBytes)
        self.corners = corners
    }

    /// Whether the text is what the code means beyond doubt: its character
    /// set declared or clearly guessed, and no other read of it said otherwise.
    /// A code that is not certain is nothing decoded, unless the caller
    /// asks for everything with the doubt said (`--json`).
    public var isCertain: Bool { charset.clear && disagreeing.isEmpty }

    /// The stream's text and character set taken into this code.
    mutating func take(_ stream: QRBitstream) {
        self.stream = stream
        bytes = stream.bytes
        (text, charset) = QRText.decode(stream)
    }

    public var center: ImagePoint {
        guard !corners.isEmpty else { return ImagePoint(x: 0, y: 0) }
        return ImagePoint(x: corners.map(\.x).reduce(0, +) / Double(corners.count), y: corners.map(\.y).reduce(0, +) / Double(corners.count))
    }

    struct Bounds {
        var minX, minY, maxX, maxY: Double
        init(_ p: [ImagePoint]) {
            minX = p.map(\.x).min() ?? 0; minY = p.map(\.y).min() ?? 0
            maxX = p.map(\.x).max() ?? 0; maxY = p.map(\.y).max() ?? 0
        }
    }

    /// The axis-aligned box around the corners (a sequence's: its first part's).
    var bounds: Bounds { Bounds(corners) }

    /// Rough side length in pixels.
    var side: Double {
        let b = bounds
        return max(1, min(b.maxX - b.minX, b.maxY - b.minY))
    }

    /// The same code seen twice (on two rungs of the ladder, or twice on a
    /// redrawn montage): same bytes, centres closer than half its size.
    func isSameCode(as o: ScannedCode) -> Bool {
        guard bytes == o.bytes else { return false }
        let c = center, d = o.center
        let dist = ((c.x - d.x) * (c.x - d.x) + (c.y - d.y) * (c.y - d.y)).squareRoot()
        return dist < max(side, o.side) / 2
    }

    /// Where another read of this code would be, whatever it read: centres
    /// closer than half its size, and sides within a third of each other (a
    /// code drawn inside another is in another place).
    func isSamePlace(as o: ScannedCode) -> Bool {
        let c = center, d = o.center
        let dist = ((c.x - d.x) * (c.x - d.x) + (c.y - d.y) * (c.y - d.y)).squareRoot()
        return dist < max(side, o.side) / 2 && min(side, o.side) * 1.5 >= max(side, o.side)
    }

    /// Whether this code's box lies inside `o`'s (a code drawn within a code).
    func isInside(_ o: ScannedCode) -> Bool {
        let a = bounds, b = o.bounds
        return a.minX >= b.minX && a.maxX <= b.maxX && a.minY >= b.minY && a.maxY <= b.maxY && side < o.side
    }

    /// Reading order: rows top to bottom, left to right within a row (two
    /// codes share a row when their vertical extents overlap by half the
    /// smaller one); a code that holds another comes before it.
    static func readingOrder(_ codes: [ScannedCode]) -> [ScannedCode] {
        codes.sorted { a, b in
            if a.isInside(b) { return false }
            if b.isInside(a) { return true }
            let x = a.bounds, y = b.bounds
            let overlap = min(x.maxY, y.maxY) - max(x.minY, y.minY)
            if overlap > min(x.maxY - x.minY, y.maxY - y.minY) / 2 { return a.center.x < b.center.x }
            return a.center.y < b.center.y
        }
    }
}
