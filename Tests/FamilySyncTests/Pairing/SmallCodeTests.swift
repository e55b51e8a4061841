import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// Codes of about two pixels a module inside a large photo, blurred, under a
/// light gradient and sensor noise: a far-away poster. They read back exactly,
/// and a photo without a code reads as nothing.
@Suite struct SmallCodeTests {
    static let width = 2000, height = 1500

    /// The photo: `text`'s code at `module` pixels a module, turned a little,
    /// placed off centre on a gradient, blurred and noisy; nil `text` for none.
    static func photo(_ text: String?, module: Double, seed: UInt64) throws -> (image: GrayImage, centre: (Double, Double)) {
        var rng = SplitMix64(seed: seed)
        let W = width, H = height
        let cx = Double(W) * rng.uniform(0.3, 0.7), cy = Double(H) * rng.uniform(0.3, 0.7)
        let gx = rng.uniform(-1, 1), gy = rng.uniform(-1, 1)
        // Light falling off across the frame, and a faint texture of the scene.
        let background: (Int, Int) -> Double = { x, y in
            let fx: Double = Double(x) / Double(W) - 0.5, fy: Double = Double(y) / Double(H) - 0.5
            let g: Double = 1 + 0.5 * (fx * gx + fy * gy)
            let texture: Double = 30 * sin(Double(x) / 37) * cos(Double(y) / 53)
            return (150 + texture) * g
        }
        var v: [Double]
        if let text {
            let code = try TestImages.code(text, level: .M, module: 8)
            let side = Double(code.width) / 8 * module, a = rng.uniform(-10, 10) * .pi / 180
            let corners = [(-side / 2, -side / 2), (side / 2, -side / 2), (side / 2, side / 2), (-side / 2, side / 2)].map { (x, y) in
                (cx + x * cos(a) - y * sin(a), cy + x * sin(a) + y * cos(a))
            }
            v = TestImages.place(code, width: W, height: H, corners: corners, paper: rng.uniform(200, 230), ink: rng.uniform(30, 60), background: background)
        } else {
            v = (0..<(W * H)).map { background($0 % W, $0 / W) }
        }
        // A lens's soft focus: half the picture through a 3×3 box.
        let blurred = TestImages.blur(v, width: W, height: H, radius: 1, passes: 1)
        for i in 0..<v.count { v[i] = (v[i] + blurred[i]) / 2 }
        for i in 0..<v.count { v[i] += 3 * rng.gaussian() }
        return (TestImages.toGray(v, width: W, height: H), (cx, cy))
    }

    func readsExactly(module: Double, seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let text = TestImages.offerText(&rng)
        let (image, centre) = try SmallCodeTests.photo(text, module: module, seed: seed)
        // The small codes' path is what finds it: a region around the code.
        let regions = QRSmallCodes.regions(in: image)
        #expect(regions.contains { Double($0.x) < centre.0 && centre.0 < Double($0.x + $0.width) && Double($0.y) < centre.1 && centre.1 < Double($0.y + $0.height) },
                "no region around the code: \(regions)")
        // The regions redrawn read on their own, back where the code was drawn.
        let redrawn = QRSmallCodes.canvas(image, regions)
        let direct = redrawn.map { r in ZXingScanner(options: [.tryHarder]).scan(r.image).map { ($0.text, $0.corners.map(r.toPhoto)) } } ?? []
        // (Two regions may hold the same code.)
        #expect(!direct.isEmpty && direct.allSatisfy { $0.0 == text }, "the redrawn regions read \(direct.map(\.0))")
        if let corners = direct.first?.1 {
            let mx = corners.map(\.x).reduce(0, +) / 4, my = corners.map(\.y).reduce(0, +) / 4
            #expect(abs(mx - centre.0) < 20 && abs(my - centre.1) < 20, "redrawn corners \(corners) around \(centre)")
        }
        let result = QRReader().scan(image)
        #expect(result.texts == [text], "read \(result.texts) via \(result.step ?? "nothing")")
        // Its corners lie around where the code was drawn.
        if let c = result.codes.first, c.corners.count == 4 {
            let mx = c.corners.map(\.x).reduce(0, +) / 4, my = c.corners.map(\.y).reduce(0, +) / 4
            #expect(abs(mx - centre.0) < 20 && abs(my - centre.1) < 20, "corners \(c.corners) around \(centre)")
        }
    }

    @Test func aCodeOfTwoPixelsAModuleInALargePhotoReadsExactly() throws {
        try readsExactly(module: 2, seed: 41)
    }

    @Test func aCodeOfOnePointSevenPixelsAModuleReadsExactly() throws {
        try readsExactly(module: 1.7, seed: 42)
    }

    @Test func aLargePhotoWithoutACodeReadsAsNothing() throws {
        let (image, _) = try SmallCodeTests.photo(nil, module: 2, seed: 43)
        let result = QRReader().scan(image)
        #expect(result.codes.isEmpty, "read \(result.texts)")
        #expect(result.seen.isEmpty, "saw \(result.seen.map(\.text))")
    }

    @Test func theThresholdsKeepALargeDarkSquareSolidInBothPolarities() {
        var img = GrayImage(width: 60, height: 60, fill: 200)
        for y in 20..<40 { for x in 20..<40 { img[x, y] = 40 } }
        let t = img.adaptiveThresholds(radius: 3, flatRadius: 12, offset: 3)
        #expect(t.dark[30, 30] == 0 && t.dark[21, 21] == 0 && t.dark[5, 5] == 255)
        let u = img.inverted().adaptiveThresholds(radius: 3, flatRadius: 12, offset: 3)
        #expect(u.light[30, 30] == 0 && u.light[5, 5] == 255)
    }

    @Test func transposedAndCroppedMoveEveryPixelWhereItBelongs() {
        var rng = SplitMix64(seed: 5)
        let img = GrayImage(width: 7, height: 3, pixels: rng.bytes(21))
        let t = img.transposed()
        #expect(t.width == 3 && t.height == 7 && t[2, 5] == img[5, 2])
        #expect(t.transposed() == img)
        let c = img.cropped(x: 5, y: 1, width: 4, height: 4)
        #expect(c.width == 2 && c.height == 2 && c[1, 1] == img[6, 2])
    }
}
