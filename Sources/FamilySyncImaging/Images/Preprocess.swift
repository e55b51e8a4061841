import FamilySync
/// The image operations the scanning ladder is built from. Each returns a
/// new image and costs O(pixels), whatever the window size (integral images).
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
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<nh {
                    let fy = max(0, (Double(y) + 0.5) * sy - 0.5)
                    let y0 = min(Int(fy), height - 1), y1 = min(y0 + 1, height - 1)
                    let wy = Int((fy - Double(y0)) * 256)
                    for x in 0..<nw {
                        let fx = max(0, (Double(x) + 0.5) * sx - 0.5)
                        let x0 = min(Int(fx), width - 1), x1 = min(x0 + 1, width - 1)
                        let wx = Int((fx - Double(x0)) * 256)
                        let a = Int(src[y0 * width + x0]), b = Int(src[y0 * width + x1])
                        let c = Int(src[y1 * width + x0]), d = Int(src[y1 * width + x1])
                        let top = a * (256 - wx) + b * wx, bottom = c * (256 - wx) + d * wx
                        dst[y * nw + x] = UInt8((top * (256 - wy) + bottom * wy + 32768) >> 16)
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

    /// Summed-area table with a zero row and column in front.
    func integral() -> [Int] {
        let w1 = width + 1
        var s = [Int](repeating: 0, count: w1 * (height + 1))
        pixels.withUnsafeBufferPointer { src in
            s.withUnsafeMutableBufferPointer { t in
                for y in 0..<height {
                    var row = 0
                    for x in 0..<width {
                        row += Int(src[y * width + x])
                        t[(y + 1) * w1 + x + 1] = t[y * w1 + x + 1] + row
                    }
                }
            }
        }
        return s
    }

    /// The mean of each pixel's (2r+1)² neighbourhood, clipped at the edges.
    func boxMean(radius r: Int) -> [Int] {
        let s = integral()
        let w1 = width + 1
        var out = [Int](repeating: 0, count: pixels.count)
        s.withUnsafeBufferPointer { t in
            out.withUnsafeMutableBufferPointer { o in
                for y in 0..<height {
                    let y0 = max(0, y - r), y1 = min(height, y + r + 1)
                    for x in 0..<width {
                        let x0 = max(0, x - r), x1 = min(width, x + r + 1)
                        let sum = t[y1 * w1 + x1] - t[y0 * w1 + x1] - t[y1 * w1 + x0] + t[y0 * w1 + x0]
                        o[y * width + x] = sum / ((y1 - y0) * (x1 - x0))
                    }
                }
            }
        }
        return out
    }

    /// A box blur of radius r: tames sensor noise and JPEG blocking.
    public func boxBlurred(radius r: Int) -> GrayImage {
        GrayImage(width: width, height: height, pixels: boxMean(radius: r).map { UInt8($0) })
    }

    /// Local (adaptive) threshold: dark where a pixel is `offset` below the
    /// mean of its neighbourhood. Uneven light, gradients and glare stop mattering.
    public func adaptiveThreshold(radius r: Int, offset: Int) -> GrayImage {
        let mean = boxMean(radius: r)
        var out = [UInt8](repeating: 255, count: pixels.count)
        for i in 0..<pixels.count where Int(pixels[i]) < mean[i] - offset { out[i] = 0 }
        return GrayImage(width: width, height: height, pixels: out)
    }

    /// Subtracts the local mean and rescales by the local contrast: keeps the
    /// gray levels (unlike a threshold) while flattening light falloff and glare.
    public func locallyNormalized(radius r: Int) -> GrayImage {
        let mean = boxMean(radius: r)
        var dev = [UInt8](repeating: 0, count: pixels.count)
        for i in 0..<pixels.count { dev[i] = UInt8(min(255, abs(Int(pixels[i]) - mean[i]))) }
        let spread = GrayImage(width: width, height: height, pixels: dev).boxMean(radius: r)
        var out = [UInt8](repeating: 0, count: pixels.count)
        for i in 0..<pixels.count {
            let v = 128 + (Int(pixels[i]) - mean[i]) * 80 / max(spread[i], 8)
            out[i] = UInt8(max(0, min(255, v)))
        }
        return GrayImage(width: width, height: height, pixels: out)
    }

    /// Unsharp mask: restores the module edges of a slightly blurred photo.
    public func sharpened(radius r: Int, amount: Int) -> GrayImage {
        let mean = boxMean(radius: r)
        var out = [UInt8](repeating: 0, count: pixels.count)
        for i in 0..<pixels.count {
            let v = Int(pixels[i]) + (Int(pixels[i]) - mean[i]) * amount / 100
            out[i] = UInt8(max(0, min(255, v)))
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
