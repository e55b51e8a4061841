import Testing
@testable import FamilySyncImaging

/// The ladder's image operations against plain, obviously right versions of
/// themselves: the fast running sums must give exactly the same pixels.
@Suite struct PreprocessTests {
    static func random(_ w: Int, _ h: Int, seed: UInt64) -> GrayImage {
        var rng = SplitMix64(seed: seed)
        return GrayImage(width: w, height: h, pixels: (0..<(w * h)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
    }

    /// The mean of the clipped (2r+1)² window, summed pixel by pixel.
    static func naiveMean(_ img: GrayImage, _ r: Int) -> [UInt8] {
        var out: [UInt8] = []
        for y in 0..<img.height {
            for x in 0..<img.width {
                var sum = 0, n = 0
                for yy in max(0, y - r)..<min(img.height, y + r + 1) {
                    for xx in max(0, x - r)..<min(img.width, x + r + 1) { sum += Int(img[xx, yy]); n += 1 }
                }
                out.append(UInt8(sum / n))
            }
        }
        return out
    }

    // Sizes include one pixel wide, a radius larger than the image, and flat white (the largest sums).
    static let cases: [(Int, Int, Int)] = [(1, 1, 1), (1, 17, 3), (23, 1, 2), (31, 19, 0), (31, 19, 1), (40, 33, 4), (12, 9, 30)]

    @Test(arguments: cases)
    func boxMeanIsTheMeanOfTheClippedWindow(w: Int, h: Int, r: Int) {
        for img in [PreprocessTests.random(w, h, seed: UInt64(w * 1000 + h * 10 + r)), GrayImage(width: w, height: h, fill: 255)] {
            #expect(img.boxMean(radius: r) == PreprocessTests.naiveMean(img, r))
        }
    }

    @Test func thresholdNormalizeAndSharpenFollowTheirFormulas() {
        let img = PreprocessTests.random(37, 29, seed: 7)
        let r = 3
        let mean = PreprocessTests.naiveMean(img, r).map(Int.init)
        #expect(img.adaptiveThreshold(radius: r, offset: 4).pixels == img.pixels.indices.map { Int(img.pixels[$0]) < mean[$0] - 4 ? 0 : 255 })
        #expect(img.sharpened(radius: r, amount: 150).pixels == img.pixels.indices.map { i in
            let p = Int(img.pixels[i])
            return UInt8(max(0, min(255, p + (p - mean[i]) * 150 / 100)))
        })
        let dev = GrayImage(width: img.width, height: img.height, pixels: img.pixels.indices.map { UInt8(abs(Int(img.pixels[$0]) - mean[$0])) })
        let spread = PreprocessTests.naiveMean(dev, r).map(Int.init)
        #expect(img.locallyNormalized(radius: r).pixels == img.pixels.indices.map { i in
            UInt8(max(0, min(255, 128 + (Int(img.pixels[i]) - mean[i]) * 80 / max(spread[i], 8))))
        })
    }

    @Test func resizingByTwoInterpolatesBetweenSourcePixels() {
        let img = PreprocessTests.random(13, 7, seed: 3)
        let big = img.resized(width: 26, height: 14)
        #expect(big.width == 26 && big.height == 14)
        // Every output pixel lies between the source pixels around it.
        for y in 0..<14 {
            for x in 0..<26 {
                let sx = min(x / 2, 12), sy = min(y / 2, 6)
                let near = [img[max(0, sx - 1), max(0, sy - 1)], img[min(12, sx + 1), min(6, sy + 1)], img[sx, sy],
                            img[max(0, sx - 1), min(6, sy + 1)], img[min(12, sx + 1), max(0, sy - 1)],
                            img[max(0, sx - 1), sy], img[min(12, sx + 1), sy], img[sx, max(0, sy - 1)], img[sx, min(6, sy + 1)]]
                #expect(big[x, y] >= near.min()! && big[x, y] <= near.max()!)
            }
        }
        // The same size is the same image.
        #expect(img.resized(width: 13, height: 7) == img)
    }
}
