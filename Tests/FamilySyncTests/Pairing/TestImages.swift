import Foundation
@testable import FamilySync
@testable import FamilySyncImaging

/// Draws for the image corpora from the shared seeded generator: the same
/// seed gives the same corpus on every machine.
extension SplitMix64 {
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func uniform(_ a: Double, _ b: Double) -> Double { a + (b - a) * unit() }
    mutating func int(_ r: ClosedRange<Int>) -> Int { r.lowerBound + Int(next() % UInt64(r.count)) }
    mutating func gaussian() -> Double {
        let u = max(unit(), 1e-12), v = unit()
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
    mutating func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

/// Photo-like test images of QR codes, made with the library's own encoder
/// and plain arithmetic: no files, no network, no Python.
enum TestImages {
    static func offerText(_ rng: inout SplitMix64) -> String {
        let hex = Array("0123456789ABCDEF")
        var u = (0..<32).map { _ in hex[rng.int(0...15)] }
        u[12] = "4"
        let uuid = String(u[0..<8]) + "-" + String(u[8..<12]) + "-" + String(u[12..<16]) + "-" + String(u[16..<20]) + "-" + String(u[20..<32])
        let nonce = Base32.encode(rng.bytes(20))
        return "FS1/\(uuid)/\(nonce)/\(1_790_000_000 + rng.int(0...9_999_999))/192.168.1.\(rng.int(2...250)):7433"
    }

    static func code(_ text: String, level: QRCode.Level = .M, module: Int = 4, margin: Int = 4) throws -> GrayImage {
        try QRRenderer(code: QRCode.encode(alphanumeric: text, level: level), margin: margin, moduleSize: module).raster()
    }

    /// Solves for the homography taking the four `from` points to the four `to` points.
    static func homography(from: [(Double, Double)], to: [(Double, Double)]) -> [Double] {
        var a = [[Double]](repeating: [Double](repeating: 0, count: 9), count: 8)
        for i in 0..<4 {
            let (x, y) = from[i], (u, v) = to[i]
            a[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y, u]
            a[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y, v]
        }
        for c in 0..<8 {
            let p = (c..<8).max { abs(a[$0][c]) < abs(a[$1][c]) }!
            a.swapAt(c, p)
            for r in 0..<8 where r != c {
                let f = a[r][c] / a[c][c]
                for k in c..<9 { a[r][k] -= f * a[c][k] }
            }
        }
        return (0..<8).map { a[$0][8] / a[$0][$0] } + [1]
    }

    /// Draws `code` (black on white) onto a canvas through a perspective
    /// mapping of its corners to `corners`, with given paper and ink levels;
    /// `background` paints what is outside the code.
    static func place(_ code: GrayImage, width: Int, height: Int, corners: [(Double, Double)], paper: Double, ink: Double,
                      background: (Int, Int) -> Double) -> [Double] {
        let w = Double(code.width), h = Double(code.height)
        let m = homography(from: corners, to: [(0, 0), (w, 0), (w, h), (0, h)])
        var out = [Double](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let fx = Double(x) + 0.5, fy = Double(y) + 0.5
                let d = m[6] * fx + m[7] * fy + m[8]
                let sx = (m[0] * fx + m[1] * fy + m[2]) / d - 0.5, sy = (m[3] * fx + m[4] * fy + m[5]) / d - 0.5
                if sx < -0.5 || sy < -0.5 || sx > w - 0.5 || sy > h - 0.5 {
                    out[y * width + x] = background(x, y)
                    continue
                }
                let x0 = max(0, min(code.width - 1, Int(sx.rounded(.down)))), y0 = max(0, min(code.height - 1, Int(sy.rounded(.down))))
                let x1 = min(x0 + 1, code.width - 1), y1 = min(y0 + 1, code.height - 1)
                let ax = max(0, min(1, sx - Double(x0))), ay = max(0, min(1, sy - Double(y0)))
                let v = (Double(code[x0, y0]) * (1 - ax) + Double(code[x1, y0]) * ax) * (1 - ay)
                    + (Double(code[x0, y1]) * (1 - ax) + Double(code[x1, y1]) * ax) * ay
                out[y * width + x] = ink + (paper - ink) * v / 255
            }
        }
        return out
    }

    static func toGray(_ v: [Double], width: Int, height: Int) -> GrayImage {
        GrayImage(width: width, height: height, pixels: v.map { UInt8(max(0, min(255, $0.rounded()))) })
    }

    /// Separable box blur applied `passes` times (close to a Gaussian).
    static func blur(_ v: [Double], width: Int, height: Int, radius: Int, passes: Int) -> [Double] {
        var cur = v
        for _ in 0..<passes {
            var tmp = cur
            for y in 0..<height {
                for x in 0..<width {
                    var s = 0.0, n = 0.0
                    for k in max(0, x - radius)...min(width - 1, x + radius) { s += cur[y * width + k]; n += 1 }
                    tmp[y * width + x] = s / n
                }
            }
            for y in 0..<height {
                for x in 0..<width {
                    var s = 0.0, n = 0.0
                    for k in max(0, y - radius)...min(height - 1, y + radius) { s += tmp[k * width + x]; n += 1 }
                    cur[y * width + x] = s / n
                }
            }
        }
        return cur
    }

    enum Distortion: String, CaseIterable {
        case rotation, perspective, blur, noise, inversion, lowContrast, gradient, glare, downscale, clutter, jpeg
    }

    /// One hard image: a code under `kind` (strongly) and mild camera noise.
    static func hard(_ kind: Distortion, text: String, rng: inout SplitMix64) throws -> GrayImage {
        try hard(kind, segments: [.alphanumeric(text)], rng: &rng)
    }

    /// One hard image of a code made of `segments` (any modes), level M.
    static func hard(_ kind: Distortion, segments: [QRCode.Segment], rng: inout SplitMix64) throws -> GrayImage {
        let module = kind == .downscale ? 6 : rng.int(3...4)
        let code = try QRRenderer(code: QRCode.encode(segments: segments, level: .M), margin: 4, moduleSize: module).raster()
        let side = Double(code.width)
        let W = kind == .downscale ? 720 : 420, H = kind == .downscale ? 600 : 400
        let cx = Double(W) / 2 + rng.uniform(-12, 12), cy = Double(H) / 2 + rng.uniform(-12, 12)
        let angle = kind == .rotation ? rng.uniform(20, 70) * (rng.unit() < 0.5 ? -1 : 1) : rng.uniform(-6, 6)
        let a = angle * .pi / 180
        var corners: [(Double, Double)] = [(-side / 2, -side / 2), (side / 2, -side / 2), (side / 2, side / 2), (-side / 2, side / 2)].map { (x, y) in
            (cx + x * cos(a) - y * sin(a), cy + x * sin(a) + y * cos(a))
        }
        if kind == .perspective {
            // Pull two neighbouring corners in: the code seen from the side.
            let k = rng.int(0...3), f = rng.uniform(0.14, 0.22)
            for j in [k, (k + 1) % 4] {
                corners[j].0 += (cx - corners[j].0) * f
                corners[j].1 += (cy - corners[j].1) * f
            }
        }
        var paper = rng.uniform(215, 245), ink = rng.uniform(15, 45)
        if kind == .lowContrast {
            let mid = rng.uniform(110, 150), spread = rng.uniform(22, 30)
            paper = mid + spread / 2
            ink = mid - spread / 2
        }
        if kind == .inversion { (paper, ink) = (255 - paper, 255 - ink) }
        let clutterSeed = rng.next()
        let background: (Int, Int) -> Double
        if kind == .clutter {
            // Stripes, blocks and a checkerboard, all at code-like sizes.
            background = { x, y in
                let h = (UInt64(x / 9) &* 0x9E37_79B9 ^ UInt64(y / 7) &* 0x85EB_CA6B ^ clutterSeed) % 97
                if (x / 11 + y / 11) % 2 == 0 && x < 90 && y < 90 { return 20 }
                return h < 30 ? 30 : (h < 60 ? 200 : 120)
            }
        } else {
            let bg = kind == .inversion ? rng.uniform(60, 120) : rng.uniform(150, 200)
            background = { _, _ in bg }
        }
        var v = place(code, width: W, height: H, corners: corners, paper: paper, ink: ink, background: background)
        switch kind {
        case .gradient:
            let gx = rng.uniform(-1, 1), gy = rng.uniform(-1, 1), s = rng.uniform(1.0, 1.3)
            for y in 0..<H { for x in 0..<W { v[y * W + x] *= 1 + s * ((Double(x) / Double(W) - 0.5) * gx + (Double(y) / Double(H) - 0.5) * gy) } }
        case .glare:
            let gx = cx + rng.uniform(-40, 40), gy = cy + rng.uniform(-40, 40), r = rng.uniform(40, 70), amp = rng.uniform(140, 190)
            for y in 0..<H { for x in 0..<W {
                let d2 = (Double(x) - gx) * (Double(x) - gx) + (Double(y) - gy) * (Double(y) - gy)
                v[y * W + x] += amp * exp(-d2 / (2 * r * r))
            } }
        case .blur:
            v = blur(v, width: W, height: H, radius: 1, passes: module >= 4 ? 3 : 2)
        default: break
        }
        let sigma = kind == .noise ? rng.uniform(28, 38) : 3
        for i in 0..<v.count { v[i] += sigma * rng.gaussian() }
        var img = toGray(v, width: W, height: H)
        if kind == .downscale {
            // To about 1.8 pixels a module, as a far-away code in a photo.
            let f = rng.uniform(0.28, 0.32)
            img = GrayImage(width: W, height: H, pixels: img.pixels).resized(width: Int(Double(W) * f), height: Int(Double(H) * f))
        }
        if kind == .jpeg || kind == .noise {
            let q = rng.int(35...80)
            img = try JPEGCodec.decode(JPEGCodec.encode(pixels: img.pixels, width: img.width, height: img.height, quality: q))
        }
        return img
    }
}

/// Orientations every code must read in: quarter turns, any angle, mirrored.
extension GrayImage {
    /// Turned clockwise by `quarters` quarter turns, exactly (no resampling).
    func rotatedQuarter(_ quarters: Int) -> GrayImage {
        var img = self
        for _ in 0..<(((quarters % 4) + 4) % 4) {
            var out = GrayImage(width: img.height, height: img.width, fill: 0)
            for y in 0..<img.height { for x in 0..<img.width { out[img.height - 1 - y, x] = img[x, y] } }
            img = out
        }
        return img
    }
}

extension TestImages {
    /// `code` drawn on a `side`-pixel canvas of `paper`, turned by `degrees`
    /// about the centre and, if `mirrored`, seen from behind.
    static func turned(_ code: GrayImage, degrees: Double, mirrored: Bool = false, side: Int = 0) -> GrayImage {
        let s = side > 0 ? side : Int(Double(max(code.width, code.height)) * 1.5)
        let half = Double(code.width) / 2, a = degrees * .pi / 180, c = Double(s) / 2
        var pts: [(Double, Double)] = [(-half, -half), (half, -half), (half, half), (-half, half)]
        if mirrored { pts = [pts[1], pts[0], pts[3], pts[2]] }
        let corners = pts.map { (x, y) in (c + x * cos(a) - y * sin(a), c + x * sin(a) + y * cos(a)) }
        let v = place(code, width: s, height: s, corners: corners, paper: 255, ink: 0, background: { _, _ in 255 })
        return toGray(v, width: s, height: s)
    }

    /// Pastes `code` onto `canvas` with its top-left at (x, y).
    static func paste(_ code: GrayImage, into canvas: inout GrayImage, x: Int, y: Int) {
        for j in 0..<code.height { for i in 0..<code.width { canvas[x + i, y + j] = code[i, j] } }
    }
}
