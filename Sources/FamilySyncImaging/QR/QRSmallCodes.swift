import FamilySync

/// Codes whose modules are one to three pixels wide inside a large photo: too
/// small for either engine's own locator, which samples a module from a pixel
/// or two and loses it to blur. Their finder patterns can still be found on a
/// fine local threshold; each plausible code is cut out and drawn again at a
/// size both engines read well, and only the engines' own error correction
/// decides what the redrawn code says.
enum QRSmallCodes {
    /// The threshold window's radius: 7×7 pixels, a few modules of a small code.
    static let thresholdRadius = 3
    /// The wider window that decides where the 7×7 one is flat (a finder's
    /// centre once its modules near the upper size).
    static let flatRadius = 12
    /// How far (gray levels) from its window's mean a pixel must lie to count as ink.
    static let thresholdOffset = 3
    /// The largest module, in pixels, looked for here: codes with bigger
    /// modules are the rest of the ladder's.
    static let maxModule = 3.2
    /// Finder clusters kept per polarity when forming triples.
    static let maxClusters = 16
    /// Regions redrawn per image, best first: clutter makes false triples.
    static let maxRegions = 6
    /// Pixels per module in the redrawn regions.
    static let outputModule = 4.0
    /// The most pixels of the canvas the regions are drawn on.
    static let maxCanvasPixels = 4_000_000
    /// The shortest longer side of a photo for which the transposed canvas is
    /// also scanned: below it, the ladder's other rungs read these codes.
    static let minTransposedSide = 800
    /// Modules kept around the box of the finder centres: 3.5 to the code's
    /// edge, the quiet zone's 4 and slack.
    static let marginModules = 9.0
    /// Extra margin, as a part of the code's side, for perspective.
    static let perspectiveSlack = 0.1
    /// The sharpening after the enlargement: a radius of one output pixel, lightly.
    static let sharpenRadius = 1
    static let sharpenAmount = 100
    /// White pixels between regions on the canvas.
    static let gap = 16
    /// Overlap (intersection over union) above which a region repeats one already taken.
    static let maxOverlap = 0.5

    /// A part of the photo holding a plausible small code.
    struct Region: Sendable, Equatable {
        var x: Int, y: Int, width: Int, height: Int
        /// Output pixels per photo pixel.
        var scale: Double
        /// Light modules on dark: the crop is inverted before it is drawn.
        var lightOnDark: Bool

        func overlap(_ o: Region) -> Double {
            let w = min(x + width, o.x + o.width) - max(x, o.x), h = min(y + height, o.y + o.height) - max(y, o.y)
            guard w > 0, h > 0 else { return 0 }
            let i = Double(w * h)
            return i / (Double(width * height + o.width * o.height) - i)
        }
    }

    /// The regions of `image` holding finder triples of small modules, dark
    /// or light ink, best first, at most `maxRegions`.
    static func regions(in image: GrayImage) -> [Region] {
        guard image.width > 0, image.height > 0 else { return [] }
        let t = image.adaptiveThresholds(radius: thresholdRadius, flatRadius: flatRadius, offset: thresholdOffset)
        var scored: [(Region, Double)] = []
        for (binary, light) in [(t.dark, false), (t.light, true)] {
            let finders = QRRectifier.findFinders(binary, maxModule: maxModule, limit: maxClusters)
            guard finders.count >= 3 else { continue }
            for triple in QRRectifier.bestTriples(finders) {
                if let r = region(triple, in: image, lightOnDark: light) { scored.append((r, triple.score)) }
            }
        }
        var out: [Region] = []
        for (r, _) in scored.sorted(by: { $0.1 < $1.1 }) where !out.contains(where: { $0.overlap(r) > maxOverlap }) {
            out.append(r)
            if out.count == maxRegions { break }
        }
        return out
    }

    static func region(_ t: QRRectifier.Triple, in image: GrayImage, lightOnDark: Bool) -> Region? {
        let m = (t.a.module + t.b.module + t.c.module) / 3
        guard m > 0 else { return nil }
        // The three finder centres and the fourth corner they imply.
        let xs = [t.a.x, t.b.x, t.c.x, t.b.x + t.c.x - t.a.x], ys = [t.a.y, t.b.y, t.c.y, t.b.y + t.c.y - t.a.y]
        let minX = xs.reduce(.infinity, min), maxX = xs.reduce(-.infinity, max)
        let minY = ys.reduce(.infinity, min), maxY = ys.reduce(-.infinity, max)
        let side = max(maxX - minX, maxY - minY)
        let margin = marginModules * m + perspectiveSlack * side
        let x0 = max(0, Int(minX - margin)), y0 = max(0, Int(minY - margin))
        let x1 = min(image.width, Int(maxX + margin) + 1), y1 = min(image.height, Int(maxY + margin) + 1)
        guard x1 > x0, y1 > y0 else { return nil }
        return Region(x: x0, y: y0, width: x1 - x0, height: y1 - y0, scale: outputModule / m, lightOnDark: lightOnDark)
    }

    /// The regions enlarged to `outputModule` pixels a module, sharpened,
    /// dark on light, side by side on one white canvas of at most
    /// `maxCanvasPixels`, with the way back to the photo; nil for no region.
    static func canvas(_ image: GrayImage, _ regions: [Region]) -> QRReader.Rendition? {
        var tiles: [QRReader.Rendition] = []
        var width = gap, height = 0
        for r in regions {
            let w = Int((Double(r.width) * r.scale).rounded()), h = Int((Double(r.height) * r.scale).rounded())
            guard w > 0, h > 0 else { continue }
            let nw = width + w + gap, nh = max(height, h + 2 * gap)
            if nw * nh > maxCanvasPixels { continue }
            var crop = image.cropped(x: r.x, y: r.y, width: r.width, height: r.height)
            if r.lightOnDark { crop = crop.inverted() }
            // A faint code stretched to full contrast: ZXing takes a block under 24 levels for blank.
            crop = crop.contrastStretched()
            tiles.append(QRReader.Rendition(image: crop.resized(width: w, height: h).sharpened(radius: sharpenRadius, amount: sharpenAmount),
                                            toPhoto: { p in ImagePoint(x: Double(r.x) + p.x / r.scale, y: Double(r.y) + p.y / r.scale) }))
            width = nw
            height = nh
        }
        return QRReader.Rendition.sideBySide(tiles, gap: gap)
    }
}
