import FamilySync
/// Finds a QR code's three finder patterns itself and redraws the code
/// square and upright, for the photos zbar's own locator gives up on: strong
/// perspective, and modules too small for it. The three finder centres and
/// the alignment pattern (found by template search) fix a homography; the
/// code is resampled through it at a comfortable module size, and zbar then
/// decodes a nearly ideal image, still through its error correction.
enum QRRectifier {
    /// Finder-pattern triples redrawn per image, best first: a few, because
    /// clutter makes false triples, and each costs a zbar pass over its drawing.
    static let maxCandidates = 6
    /// Finder clusters considered when forming triples.
    static let maxClusters = 10
    /// Pixels per module in the redrawn code.
    static let outputModule = 4
    /// How far (in modules) from its affine estimate the alignment pattern is searched for.
    static let alignmentSearch = 6.0

    struct Finder { var x: Double; var y: Double; var module: Double; var hits: Int }

    /// Redraws every plausible code found in `binary` (dark = 0) from `gray`,
    /// side by side on one white canvas, with the way back from the canvas to
    /// the photo; nil when no finder triple is found.
    static func rectify(gray: GrayImage, binary: GrayImage) -> QRReader.Rendition? {
        let finders = findFinders(binary)
        guard finders.count >= 3 else { return nil }
        let triples = bestTriples(finders)
        var tiles: [(image: GrayImage, homography: [Double])] = []
        for t in triples.prefix(maxCandidates) {
            // The size from the timing pattern when it can be counted, and the distance estimate and its neighbours.
            var sizes: [Int] = []
            if let n = timingSize(binary, t) { sizes.append(n) }
            for n in [t.size, t.size - 4, t.size + 4] where n >= 21 && n <= 177 && !sizes.contains(n) { sizes.append(n) }
            for n in sizes.prefix(2) {
                var u = t
                u.size = n
                if let tile = redraw(gray: gray, binary: binary, triple: u) { tiles.append(tile) }
            }
        }
        let s = Double(outputModule), quiet = 4.0
        return QRReader.Rendition.sideBySide(tiles.map { t, hm in
            QRReader.Rendition(image: t, toPhoto: { p in
                // Back through the tile's homography, from its modules (the quiet zone first).
                let u = p.x / s - quiet, v = p.y / s - quiet
                let d = hm[6] * u + hm[7] * v + hm[8]
                return ImagePoint(x: (hm[0] * u + hm[1] * v + hm[2]) / d, y: (hm[3] * u + hm[4] * v + hm[5]) / d)
            })
        }, gap: 8 * outputModule)
    }

    // MARK: Finder patterns

    /// Whether five runs look like a finder pattern's 1:1:3:1:1.
    @inline(__always) static func ratioOK(_ c: (Int, Int, Int, Int, Int)) -> Bool {
        let total = c.0 + c.1 + c.2 + c.3 + c.4
        guard total >= 7 else { return false }
        let u = Double(total) / 7, tol = u * 0.75
        return abs(Double(c.0) - u) < tol && abs(Double(c.1) - u) < tol && abs(Double(c.3) - u) < tol && abs(Double(c.4) - u) < tol
            && abs(Double(c.2) - 3 * u) < 3 * tol
    }

    /// Runs of the column `x` around row `y` (inside the dark centre): returns
    /// the refined centre row and the pattern's height, if it is 1:1:3:1:1.
    static func crossCheckVertical(_ b: GrayImage, x: Int, y: Int, maxCount: Int) -> (Double, Int)? {
        let h = b.height, w = b.width
        @inline(__always) func dark(_ yy: Int) -> Bool { b.pixels[yy * w + x] < 128 }
        var counts = [0, 0, 0, 0, 0]
        var i = y
        while i >= 0, dark(i) { counts[2] += 1; i -= 1 }
        guard i >= 0 else { return nil }
        while i >= 0, !dark(i), counts[1] <= maxCount { counts[1] += 1; i -= 1 }
        guard i >= 0, counts[1] <= maxCount else { return nil }
        while i >= 0, dark(i), counts[0] <= maxCount { counts[0] += 1; i -= 1 }
        guard counts[0] <= maxCount else { return nil }
        i = y + 1
        while i < h, dark(i) { counts[2] += 1; i += 1 }
        guard i < h else { return nil }
        while i < h, !dark(i), counts[3] <= maxCount { counts[3] += 1; i += 1 }
        guard i < h, counts[3] <= maxCount else { return nil }
        while i < h, dark(i), counts[4] <= maxCount { counts[4] += 1; i += 1 }
        guard counts[4] <= maxCount, ratioOK((counts[0], counts[1], counts[2], counts[3], counts[4])) else { return nil }
        let end = i - counts[4] - counts[3]
        return (Double(end) - Double(counts[2]) / 2, counts.reduce(0, +))
    }

    /// The finder patterns of `b` whose module is at most `maxModule`, most
    /// often crossed first, at most `limit` of them.
    static func findFinders(_ b: GrayImage, maxModule: Double = .infinity, limit: Int = maxClusters) -> [Finder] {
        let w = b.width, h = b.height
        var clusters: [Finder] = []
        var sumX: [Double] = [], sumY: [Double] = [], sumM: [Double] = []
        var runs: [Int] = [], starts: [Int] = []
        runs.reserveCapacity(w)
        starts.reserveCapacity(w)
        for y in 0..<h {
            runs.removeAll(keepingCapacity: true)
            starts.removeAll(keepingCapacity: true)
            var x = 0
            let row = y * w
            while x < w {
                let d = b.pixels[row + x] < 128
                let s = x
                while x < w, (b.pixels[row + x] < 128) == d { x += 1 }
                runs.append(x - s)
                starts.append(s)
            }
            let firstDark = b.pixels[row] < 128
            var i = firstDark ? 0 : 1
            while i + 4 < runs.count {
                let c = (runs[i], runs[i + 1], runs[i + 2], runs[i + 3], runs[i + 4])
                if ratioOK(c) {
                    let total = c.0 + c.1 + c.2 + c.3 + c.4
                    let cx = starts[i + 2] + c.2 / 2
                    if let (cy, vTotal) = crossCheckVertical(b, x: cx, y: y, maxCount: total), Double(vTotal) > 0.5 * Double(total), Double(vTotal) < 2 * Double(total) {
                        let fx = Double(starts[i + 2]) + Double(c.2) / 2, m = Double(total + vTotal) / 14
                        if let k = clusters.firstIndex(where: { abs($0.x - fx) < 2 * m && abs($0.y - cy) < 2 * m }) {
                            clusters[k].hits += 1
                            sumX[k] += fx; sumY[k] += cy; sumM[k] += m
                            let n = Double(clusters[k].hits)
                            clusters[k].x = sumX[k] / n; clusters[k].y = sumY[k] / n; clusters[k].module = sumM[k] / n
                        } else {
                            clusters.append(Finder(x: fx, y: cy, module: m, hits: 1))
                            sumX.append(fx); sumY.append(cy); sumM.append(m)
                        }
                    }
                }
                i += 2
            }
        }
        return Array(clusters.filter { $0.hits >= 2 && $0.module <= maxModule }.sorted { $0.hits > $1.hits }.prefix(limit))
    }

    /// (top-left, top-right, bottom-left, module count) of a plausible code.
    struct Triple { var a: Finder; var b: Finder; var c: Finder; var size: Int; var score: Double }

    static func bestTriples(_ f: [Finder]) -> [Triple] {
        var out: [Triple] = []
        let n = f.count
        for i in 0..<n { for j in (i + 1)..<n { for k in (j + 1)..<n {
            let set = [f[i], f[j], f[k]]
            let ms = set.map(\.module)
            // Never nil: the set has three finder patterns.
            guard ms.max()! / ms.min()! < 2 else { continue }
            var best: Triple?
            for corner in 0..<3 {
                let a = set[corner], p = set[(corner + 1) % 3], q = set[(corner + 2) % 3]
                let abx = p.x - a.x, aby = p.y - a.y, acx = q.x - a.x, acy = q.y - a.y
                let lab = (abx * abx + aby * aby).squareRoot(), lac = (acx * acx + acy * acy).squareRoot()
                guard lab > 0, lac > 0 else { continue }
                let cosA = (abx * acx + aby * acy) / (lab * lac)
                let ratio = max(lab, lac) / min(lab, lac)
                guard abs(cosA) < 0.4, ratio < 1.7 else { continue }
                let m = ms.reduce(0, +) / 3
                let modules = (lab + lac) / 2 / m + 7
                let version = Int(((modules - 17) / 4).rounded())
                guard (1...40).contains(version) else { continue }
                // Real finder patterns are crossed by many scan lines; look-alikes in data or clutter by few.
                let hits = Double(min(a.hits, p.hits, q.hits))
                let score = abs(cosA) + (ratio - 1) / 2 + abs(modules - Double(17 + 4 * version)) / 8 - hits / 10
                // y grows downward: top-right × bottom-left turns clockwise.
                let cross = abx * acy - aby * acx
                let t = cross > 0 ? Triple(a: a, b: p, c: q, size: 17 + 4 * version, score: score)
                                  : Triple(a: a, b: q, c: p, size: 17 + 4 * version, score: score)
                // Read only when best is not nil.
                if best == nil || score < best!.score { best = t }
            }
            if let best { out.append(best) }
        } } }
        return out.sorted { $0.score < $1.score }
    }

    /// Counts the runs of the timing pattern (module row 6, between the top
    /// finders): N − 12 of them from one finder centre to the other.
    static func timingSize(_ b: GrayImage, _ t: Triple) -> Int? {
        let ay = (t.c.x - t.a.x, t.c.y - t.a.y)
        let len = (ay.0 * ay.0 + ay.1 * ay.1).squareRoot()
        guard len > 0 else { return nil }
        // Three modules down from the finder centres' row (3.5 → 6.5).
        let shiftA = 3 * t.a.module / len, shiftB = 3 * t.b.module / len
        let p0 = (t.a.x + ay.0 * shiftA, t.a.y + ay.1 * shiftA), p1 = (t.b.x + ay.0 * shiftB, t.b.y + ay.1 * shiftB)
        let dist = ((p1.0 - p0.0) * (p1.0 - p0.0) + (p1.1 - p0.1) * (p1.1 - p0.1)).squareRoot()
        let samples = Int(dist * 2)
        guard samples > 10 else { return nil }
        var runs = 0
        var last: Bool?
        for i in 0...samples {
            let f = Double(i) / Double(samples)
            let x = Int(p0.0 + (p1.0 - p0.0) * f), y = Int(p0.1 + (p1.1 - p0.1) * f)
            guard x >= 0, y >= 0, x < b.width, y < b.height else { return nil }
            let d = b.pixels[y * b.width + x] < 128
            if d != last { runs += 1; last = d }
        }
        let n = runs + 12
        guard n >= 21, (n - 17) % 4 == 0, abs(n - t.size) <= 12 else { return nil }
        return n
    }

    // MARK: Redrawing

    /// The code redrawn square, and the homography from module coordinates to photo pixels.
    static func redraw(gray: GrayImage, binary: GrayImage, triple t: Triple) -> (image: GrayImage, homography: [Double])? {
        let n = Double(t.size)
        // Module coordinates (u, v) of the finder centres, and where they are in the photo.
        var from: [(Double, Double)] = [(3.5, 3.5), (n - 3.5, 3.5), (3.5, n - 3.5)]
        var to: [(Double, Double)] = [(t.a.x, t.a.y), (t.b.x, t.b.y), (t.c.x, t.c.y)]
        let ex = ((t.b.x - t.a.x) / (n - 7), (t.b.y - t.a.y) / (n - 7))
        let ey = ((t.c.x - t.a.x) / (n - 7), (t.c.y - t.a.y) / (n - 7))
        func affine(_ u: Double, _ v: Double) -> (Double, Double) {
            (t.a.x + (u - 3.5) * ex.0 + (v - 3.5) * ey.0, t.a.y + (u - 3.5) * ex.1 + (v - 3.5) * ey.1)
        }
        if t.size > 21, let found = findAlignment(binary, at: n - 6.5, affine: affine) {
            from.append((n - 6.5, n - 6.5))
            to.append(found)
        } else {
            from.append((n - 3.5, n - 3.5))
            to.append(affine(n - 3.5, n - 3.5))
        }
        guard let hm = homography(from: from, to: to) else { return nil }
        let s = Double(outputModule), quiet = 4.0
        return (warp(gray, homography: hm, side: Int((n + 2 * quiet) * s), scale: s, offset: quiet), hm)
    }

    /// A side × side drawing of `gray` through `hm`, bilinear: output pixel
    /// (x, y) shows the point hm takes (x + ½) / scale − offset, (y + ½) / scale − offset
    /// to; points outside the photo are white.
    static func warp(_ gray: GrayImage, homography hm: [Double], side: Int, scale s: Double = 1, offset quiet: Double) -> GrayImage {
        var out = [UInt8](repeating: 255, count: side * side)
        let w = gray.width, h = gray.height
        gray.pixels.withUnsafeBufferPointer { src in
            for oy in 0..<side {
                let v = (Double(oy) + 0.5) / s - quiet
                for ox in 0..<side {
                    let u = (Double(ox) + 0.5) / s - quiet
                    let d = hm[6] * u + hm[7] * v + hm[8]
                    let x = (hm[0] * u + hm[1] * v + hm[2]) / d - 0.5, y = (hm[3] * u + hm[4] * v + hm[5]) / d - 0.5
                    guard x >= 0, y >= 0, x < Double(w - 1), y < Double(h - 1) else { continue }
                    let x0 = Int(x), y0 = Int(y), fx = x - Double(x0), fy = y - Double(y0)
                    let p = y0 * w + x0
                    let top = Double(src[p]) * (1 - fx) + Double(src[p + 1]) * fx
                    let bottom = Double(src[p + w]) * (1 - fx) + Double(src[p + w + 1]) * fx
                    out[oy * side + ox] = UInt8(top * (1 - fy) + bottom * fy)
                }
            }
        }
        return GrayImage(width: side, height: side, pixels: out)
    }

    /// Searches around the affine estimate for the 5×5 alignment pattern
    /// (dark ring, light ring, dark centre); its centre, if it matches well.
    static func findAlignment(_ b: GrayImage, at c: Double, affine: (Double, Double) -> (Double, Double)) -> (Double, Double)? {
        var best: (score: Int, du: Double, dv: Double)?
        let steps = Int(alignmentSearch * 2)
        for i in -steps...steps {
            for j in -steps...steps {
                let du = Double(i) / 2, dv = Double(j) / 2
                var score = 0
                for cy in 0..<5 {
                    for cx in 0..<5 {
                        let (x, y) = affine(c + du + Double(cx - 2), c + dv + Double(cy - 2))
                        let xi = Int(x), yi = Int(y)
                        guard xi >= 0, yi >= 0, xi < b.width, yi < b.height else { continue }
                        let dark = b.pixels[yi * b.width + xi] < 128
                        let want = cx == 0 || cy == 0 || cx == 4 || cy == 4 || (cx == 2 && cy == 2)
                        if dark == want { score += 1 }
                    }
                }
                // Read only when best is not nil.
                if best == nil || score > best!.score || (score == best!.score && abs(du) + abs(dv) < abs(best!.du) + abs(best!.dv)) {
                    best = (score, du, dv)
                }
            }
        }
        guard let best, best.score >= 21 else { return nil }
        return affine(c + best.du, c + best.dv)
    }

    /// The homography taking four points to four others (row-major 3×3), by
    /// Gaussian elimination; nil if they are degenerate.
    static func homography(from: [(Double, Double)], to: [(Double, Double)]) -> [Double]? {
        var a = [[Double]](repeating: [Double](repeating: 0, count: 9), count: 8)
        for i in 0..<4 {
            let (x, y) = from[i], (u, v) = to[i]
            a[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y, u]
            a[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y, v]
        }
        for col in 0..<8 {
            let p = (col..<8).max { abs(a[$0][col]) < abs(a[$1][col]) }!
            guard abs(a[p][col]) > 1e-9 else { return nil }
            a.swapAt(col, p)
            for r in 0..<8 where r != col {
                let f = a[r][col] / a[col][col]
                if f != 0 { for k in col..<9 { a[r][k] -= f * a[col][k] } }
            }
        }
        return (0..<8).map { a[$0][8] / a[$0][$0] } + [1]
    }
}
