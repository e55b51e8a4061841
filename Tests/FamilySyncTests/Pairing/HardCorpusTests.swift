import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// A seeded corpus of hard photos of pairing codes, made by the test itself:
/// every one must read back to exactly its text in every orientation, and
/// the ladder must be what reads the ones plain zbar cannot.
@Suite struct HardCorpusTests {
    static let seed: UInt64 = 20_261_130
    static let perKind = 2

    struct Sample { var kind: TestImages.Distortion; var text: String; var image: GrayImage }

    static let corpus: [Sample] = {
        var rng = SplitMix64(seed: seed)
        var out: [Sample] = []
        for kind in TestImages.Distortion.allCases {
            for _ in 0..<perKind {
                let text = TestImages.offerText(&rng)
                out.append(Sample(kind: kind, text: text, image: try! TestImages.hard(kind, text: text, rng: &rng)))
            }
        }
        return out
    }()

    /// Quarter turns clockwise, and whether the image is mirrored.
    static let orientations: [(quarters: Int, mirrored: Bool)] = [(0, false), (1, false), (2, false), (3, false), (0, true), (1, true)]

    @Test(arguments: 0..<orientations.count)
    func everyHardImageReadsBackExactly(orientation: Int) {
        let (quarters, mirrored) = HardCorpusTests.orientations[orientation]
        let reader = QRReader()
        var failed: [String] = [], wrong: [String] = []
        for (i, s) in HardCorpusTests.corpus.enumerated() {
            var img = s.image.rotatedQuarter(quarters)
            if mirrored { img = img.mirrored() }
            let texts = reader.scan(img).texts
            if !texts.contains(s.text) { failed.append("#\(i) \(s.kind)") }
            if texts.contains(where: { $0 != s.text }) { wrong.append("#\(i) \(s.kind): \(texts)") }
        }
        #expect(failed.isEmpty, "not decoded at \(90 * quarters)° mirrored \(mirrored): \(failed)")
        #expect(wrong.isEmpty, "wrong texts: \(wrong)")
    }

    @Test func theLadderReadsWhatPlainZbarCannot() {
        let plain = ZBarScanner()
        let missed = HardCorpusTests.corpus.filter { plain.scan($0.image).isEmpty }
        // The corpus is hard on purpose: plain zbar (zbarimg's engine) misses many of them.
        #expect(missed.count >= HardCorpusTests.corpus.count / 4, "plain zbar missed only \(missed.count)")
        let reader = QRReader()
        for s in missed {
                let r = reader.scan(s.image)
            #expect(r.step != "zbar/gray", "\(s.kind)")
            #expect(r.texts == [s.text], "\(s.kind) via \(r.step ?? "nothing")")
        }
    }

    @Test func aBlankOrRandomImageDecodesNothing() {
        var rng = SplitMix64(seed: 7)
        let noise = GrayImage(width: 300, height: 200, pixels: rng.bytes(300 * 200))
        let blank = GrayImage(width: 300, height: 200, fill: 255)
        let reader = QRReader()
        for img in [noise, blank] {
            let r = reader.scan(img)
            #expect(r.codes.isEmpty)
            #expect(r.seen.isEmpty)
            #expect(r.step == nil)
        }
        // Nothing finder-like in a blank image: the climb ends after the plain steps.
        #expect(reader.scan(blank).stepsTried == QRReader.plainSteps)
        #expect(QRReader.ladder(for: blank).count > QRReader.plainSteps)
        // Every hard image of the corpus has finder-like patterns, readable or not.
        for s in HardCorpusTests.corpus {
            #expect(QRReader.Rungs(base: s.image).hasFinderLikePatterns, "\(s.kind)")
        }
    }

    @Test func aDamagedCodeIsNothingDecodedNotAGuess() throws {
        // Wipe a third of a level-L code: beyond what error correction can
        // repair, so nothing may come out, whatever the ladder tries.
        var rng = SplitMix64(seed: 11)
        let text = TestImages.offerText(&rng)
        var img = try TestImages.code(text, level: .L, module: 4)
        let start = img.height / 3
        for y in start..<(start + img.height / 3) { for x in (4 * 4)..<(img.width - 16) where rng.unit() < 0.5 { img[x, y] = 255 - img[x, y] } }
        let r = QRReader().scan(img)
        #expect(r.codes.isEmpty, "decoded \(r.texts) from a code damaged beyond repair")
        #expect(r.step == nil)
        // Not a guess anywhere on the ladder: nothing was read at all, let alone a wrong text.
        #expect(r.seen.isEmpty)
    }

    /// The same code undamaged reads, so the test above fails if the damage stops mattering, not only if the reader guesses.
    @Test func theUndamagedCodeOfThatTestReads() throws {
        var rng = SplitMix64(seed: 11)
        let text = TestImages.offerText(&rng)
        let img = try TestImages.code(text, level: .L, module: 4)
        #expect(QRReader().scan(img).texts == [text])
    }

    @Test func aPhotoOverTheWorkingSizeIsScannedWholeThenOnASmallerCopy() throws {
        var rng = SplitMix64(seed: 3)
        let text = TestImages.offerText(&rng)
        let code = try TestImages.code(text, module: 6)
        var big = GrayImage(width: 3000, height: 2800, fill: 200)
        #expect(big.pixelCount > QRReader.maxWorkingPixels)
        for y in 0..<code.height { for x in 0..<code.width { big[x + 1400, y + 1300] = code[x, y] } }
        let r = QRReader().scan(big)
        #expect(r.step == "zxing/full-size")
        #expect(r.texts == [text])
        // Found on the full-size image, the corners are in its pixels.
        #expect(abs((r.codes.first?.corners[0].x ?? 0) - Double(1400 + 4 * 6)) < 12)
        // Inverted, the whole photo fails and the ladder (on the copy) reads it, corners scaled back.
        let inv = QRReader().scan(big.inverted())
        #expect(inv.texts == [text])
        #expect(inv.step?.hasPrefix("zxing/inverted") == true, "\(inv.step ?? "nothing")")
        #expect(abs((inv.codes.first?.corners[0].x ?? 0) - Double(1400 + 4 * 6)) < 12)
    }
}
