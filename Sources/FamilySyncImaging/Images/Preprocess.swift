import FamilySync
/// The image operations the scanning ladder is built from. Each returns a
/// new image and costs O(pixels), whatever the window size (running box sums).
extension GrayImage {
    /// Light becomes dark: for light-on-dark codes.
    public func inverted() -> GrayImage {
        GrayImage(width: width, height: height, pixels: pixels.map { 255 &- $0 })
    }

    /// Averages `factor` × `factor` blocks: smooths noise and blur, and makes
    /// big modules the size zbar finds best, at 1/factor² of the cost.
    public func downscaled(by factor: Int) -> GrayImage {
        guard factor > 1 else { return self }
        let w = width / factor, h = height / factor
        guard w > 0, h > 0 else { return self }
        var out = [UInt8](repeating: 0, count: w * h)
        let area = factor * factor
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                var sums = [Int](repeating: 0, count: w)
                for oy in 0..<h {
                    for i in 0..<w { sums[i] = 0 }
                    for y in (oy * factor)..<(oy * factor + factor) {
                        let row = y * width
                        for ox in 0..<w {
                            var s = 0
                            let base = row + ox * factor
                            for k in 0..<factor { s += Int(src[base + k]) }
                            sums[ox] += s
                        }
                    }
                    for ox in 0..<w { dst[oy * w + ox] = UInt8((sums[ox] + area / 2) / area) }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Bilinear resampling to a new size: enlarges codes whose modules are
    /// too small for zbar's finder.
    public func resized(width nw: Int, height nh: Int) -> GrayImage {
        guard nw > 0, nh > 0 else { return self }
        var out = [UInt8](repeating: 0, count: nw * nh)
        let sx = Double(width) / Double(nw), sy = Double(height) / Double(nh)
        // Each output column's two source columns and weight, worked out once.
        var xs0 = [Int](repeating: 0, count: nw), xs1 = xs0, wxs = xs0
        for x in 0..<nw {
            let fx = max(0, (Double(x) + 0.5) * sx - 0.5)
            xs0[x] = min(Int(fx), width - 1)
            xs1[x] = min(xs0[x] + 1, width - 1)
            wxs[x] = Int((fx - Double(xs0[x])) * 256)
        }
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                xs0.withUnsafeBufferPointer { x0s in
                    xs1.withUnsafeBufferPointer { x1s in
                        wxs.withUnsafeBufferPointer { wx in
                            for y in 0..<nh {
                                let fy = max(0, (Double(y) + 0.5) * sy - 0.5)
                                let y0 = min(Int(fy), height - 1), y1 = min(y0 + 1, height - 1)
                                let wy = Int((fy - Double(y0)) * 256)
                                let r0 = y0 * width, r1 = y1 * width, o = y * nw
                                for x in 0..<nw {
                                    let x0 = x0s[x], x1 = x1s[x], w = wx[x]
                                    let top = Int(src[r0 + x0]) * (256 - w) + Int(src[r0 + x1]) * w
                                    let bottom = Int(src[r1 + x0]) * (256 - w) + Int(src[r1 + x1]) * w
                                    dst[o + x] = UInt8((top * (256 - wy) + bottom * wy + 32768) >> 16)
                                }
                            }
                        }
                    }
                }
            }
        }
        return GrayImage(width: nw, height: nh, pixels: out)
    }

    /// The gray levels below which `low` and above which `high` of the pixels lie.
    public func percentiles(low: Double, high: Double) -> (UInt8, UInt8) {
        var hist = [Int](repeating: 0, count: 256)
        for p in pixels { hist[Int(p)] += 1 }
        let n = pixels.count
        var acc = 0, lo = 0, hi = 255
        let loCount = Int(Double(n) * low), hiCount = Int(Double(n) * (1 - high))
        for v in 0..<256 { acc += hist[v]; if acc > loCount { lo = v; break } }
        acc = 0
        for v in stride(from: 255, through: 0, by: -1) { acc += hist[v]; if acc > hiCount { hi = v; break } }
        return (UInt8(lo), UInt8(max(lo, hi)))
    }

    /// Stretches the levels between the 1st and 99th percentiles to the full
    /// range: low-contrast photos (a dim screen, grey paper) become black and white.
    public func contrastStretched() -> GrayImage {
        let (lo, hi) = percentiles(low: 0.01, high: 0.99)
        let span = max(Int(hi) - Int(lo), 1)
        var lut = [UInt8](repeating: 0, count: 256)
        for v in 0..<256 { lut[v] = UInt8(max(0, min(255, (v - Int(lo)) * 255 / span))) }
        return GrayImage(width: width, height: height, pixels: pixels.map { lut[Int($0)] })
    }

    /// The mean (rounded down) of each pixel's (2r+1)² neighbourhood,
    /// clipped at the edges. Running sums down the columns, then along each
    /// row: a few additions a pixel, whatever the radius.
    func boxMean(radius: Int) -> [UInt8] {
        let w = width, h = height, r = max(0, radius)
        var out = [UInt8](repeating: 0, count: w * h)
        guard w > 0, h > 0 else { return out }
        // The sum of each column over rows top..<bottom; at most 255 × 65536 rows, well inside UInt32.
        var column = [UInt32](repeating: 0, count: w)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                column.withUnsafeMutableBufferPointer { col in
                    var y0 = 0, y1 = 0
                    for y in 0..<h {
                        let top = max(0, y - r), bottom = min(h, y + r + 1)
                        while y1 < bottom { let row = y1 * w; for x in 0..<w { col[x] &+= UInt32(src[row + x]) }; y1 += 1 }
                        while y0 < top { let row = y0 * w; for x in 0..<w { col[x] &-= UInt32(src[row + x]) }; y0 += 1 }
                        let rows = bottom - top, base = y * w
                        var sum = 0, x0 = 0, x1 = 0
                        // Near the edges the window is clipped and its area changes.
                        func clipped(_ x: Int) {
                            let left = max(0, x - r), right = min(w, x + r + 1)
                            while x1 < right { sum += Int(col[x1]); x1 += 1 }
                            while x0 < left { sum -= Int(col[x0]); x0 += 1 }
                            dst[base + x] = UInt8(truncatingIfNeeded: GrayImage.floorDivide(sum, rows * (right - left)))
                        }
                        let inner = r..<max(r, w - r)
                        for x in 0..<min(r, w) { clipped(x) }
                        if !inner.isEmpty {
                            // The whole window inside the row: one column in, one out, a fixed area.
                            let area = rows * (2 * r + 1), inverse = 1 / Double(area)
                            for x in inner {
                                if x1 < x + r + 1 { sum += Int(col[x + r]) }
                                if x - r - 1 >= 0 { sum -= Int(col[x - r - 1]) }
                                x1 = x + r + 1
                                var q = Int(Double(sum) * inverse)
                                if q * area > sum { q -= 1 } else if (q + 1) * area <= sum { q += 1 }
                                dst[base + x] = UInt8(truncatingIfNeeded: q)
                            }
                            x0 = inner.upperBound - 1 - r
                        }
                        for x in min(w, max(r, inner.upperBound))..<w { clipped(x) }
                    }
                }
            }
        }
        return out
    }

    /// ⌊n / d⌋ for n ≥ 0, d > 0, by a Double quotient: one that is not a
    /// whole number lies at least 1/d from one, so truncating it is exact.
    @inline(__always) static func floorDivide(_ n: Int, _ d: Int) -> Int { Int(Double(n) / Double(d)) }

    /// A box blur of radius r: tames sensor noise and JPEG blocking.
    public func boxBlurred(radius r: Int) -> GrayImage {
        GrayImage(width: width, height: height, pixels: boxMean(radius: r))
    }

    /// Local (adaptive) threshold: dark where a pixel is `offset` below the
    /// mean of its neighbourhood. Uneven light, gradients and glare stop mattering.
    public func adaptiveThreshold(radius r: Int, offset: Int) -> GrayImage {
        let mean = boxMean(radius: r)
        var out = [UInt8](repeating: 255, count: pixels.count)
        pixels.withUnsafeBufferPointer { p in
            mean.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    for i in 0..<p.count where Int(p[i]) + offset < Int(m[i]) { o[i] = 0 }
                }
            }
        }
        return GrayImage(width: width, height: height, pixels: out)
    }

    /// Subtracts the local mean and rescales by the local contrast: keeps the
    /// gray levels (unlike a threshold) while flattening light falloff and glare.
    public func locallyNormalized(radius r: Int) -> GrayImage {
        let mean = boxMean(radius: r)
        let n = pixels.count
        var dev = [UInt8](repeating: 0, count: n)
        pixels.withUnsafeBufferPointer { p in
            mean.withUnsafeBufferPointer { m in
                dev.withUnsafeMutableBufferPointer { d in
                    for i in 0..<n { d[i] = UInt8(abs(Int(p[i]) - Int(m[i]))) }
                }
            }
        }
        let spread = GrayImage(width: width, height: height, pixels: dev).boxMean(radius: r)
        var out = [UInt8](repeating: 0, count: n)
        pixels.withUnsafeBufferPointer { p in
            mean.withUnsafeBufferPointer { m in
                spread.withUnsafeBufferPointer { sp in
                    out.withUnsafeMutableBufferPointer { o in
                        for i in 0..<n {
                            // 128 + (pixel - mean) * 80 / spread, the quotient truncated toward zero (exact in Double).
                            let q = Int(Double((Int(p[i]) - Int(m[i])) * 80) / Double(max(Int(sp[i]), 8)))
                            o[i] = UInt8(max(0, min(255, 128 + q)))
                        }
                    }
                }
            }
        }
        return GrayImage(width: width, height: height, pixels: out)
    }

    /// Unsharp mask: restores the module edges of a slightly blurred photo.
    public func sharpened(radius r: Int, amount: Int) -> GrayImage {
        let mean = boxMean(radius: r)
        var out = [UInt8](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { p in
            mean.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    for i in 0..<p.count {
                        let v = Int(p[i]) + (Int(p[i]) - Int(m[i])) * amount / 100
                        o[i] = UInt8(max(0, min(255, v)))
                    }
                }
            }
        }
        return GrayImage(width: width, height: height, pixels: out)
    }
}

extension GrayImage {
    /// Left and right swapped: a mirrored code reads upright.
    public func mirrored() -> GrayImage {
        var out = [UInt8](repeating: 0, count: pixels.count)
        for y in 0..<height {
            let row = y * width
            for x in 0..<width { out[row + x] = pixels[row + width - 1 - x] }
        }
        return GrayImage(width: width, height: height, pixels: out)
    }
}

extension GrayImage {
    /// How much smaller the copy is on which `adaptiveThresholds` takes its wide mean.
    static let flatMeanFactor = 4

    /// Rows become columns: a mirrored code turned a quarter, which ZXing
    /// reads where it misses the mirrored original.
    public func transposed() -> GrayImage {
        var out = [UInt8](repeating: 0, count: pixels.count)
        let w = width, h = height
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<h {
                    let row = y * w
                    for x in 0..<w { dst[x * h + y] = src[row + x] }
                }
            }
        }
        return GrayImage(width: h, height: w, pixels: out)
    }

    /// The pixels of a rectangle, clipped to the image.
    public func cropped(x: Int, y: Int, width cw: Int, height ch: Int) -> GrayImage {
        let x0 = max(0, min(width, x)), y0 = max(0, min(height, y))
        let x1 = max(x0, min(width, x + cw)), y1 = max(y0, min(height, y + ch))
        var out = [UInt8]()
        out.reserveCapacity((x1 - x0) * (y1 - y0))
        for yy in y0..<y1 { out += pixels[(yy * width + x0)..<(yy * width + x1)] }
        return GrayImage(width: x1 - x0, height: y1 - y0, pixels: out)
    }

    /// Local thresholds for both polarities at once (dark = 0 in each: the
    /// first marks dark ink, the second light ink). A pixel is set by the
    /// mean of its (2r+1)² window, which follows modules of a pixel or two;
    /// where that window is flat (inside a finder's 3×3 centre once modules
    /// outgrow it) the mean of the wider `flatRadius` window decides, so
    /// large dark areas do not come out hollow. Flat paper stays background
    /// in both, not noise.
    public func adaptiveThresholds(radius r: Int, flatRadius: Int, offset: Int) -> (dark: GrayImage, light: GrayImage) {
        let near = boxMean(radius: r)
        // The wide mean only decides flat areas, so a copy a few times smaller serves, at a fraction of the cost.
        let f = GrayImage.flatMeanFactor
        let small = downscaled(by: f)
        let wide = small.boxMean(radius: max(1, flatRadius / f)), sw = small.width, sh = small.height
        let w = width
        var dark = [UInt8](repeating: 255, count: pixels.count), light = dark
        pixels.withUnsafeBufferPointer { p in
            near.withUnsafeBufferPointer { m in
                wide.withUnsafeBufferPointer { wm in
                    dark.withUnsafeMutableBufferPointer { d in
                        light.withUnsafeMutableBufferPointer { l in
                            for y in 0..<height {
                                let wrow = min(y / f, sh - 1) * sw
                                for x in 0..<w {
                                    let i = y * w + x, v = Int(p[i]), mean = Int(m[i])
                                    if v + offset < mean { d[i] = 0 } else if v > mean + offset { l[i] = 0 } else {
                                        let flat = Int(wm[wrow + min(x / f, sw - 1)])
                                        if v + offset < flat { d[i] = 0 } else if v > flat + offset { l[i] = 0 }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return (GrayImage(width: width, height: height, pixels: dark), GrayImage(width: width, height: height, pixels: light))
    }
}
