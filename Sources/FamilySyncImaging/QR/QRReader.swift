import FamilySync
import FoundationEssentials
import Dispatch
import Glibc

/// Finds QR codes in a photo: two engines, ZXing-C++ and zbar, run on a
/// ladder of preprocessed versions of the image in order of usefulness for
/// their cost, until a step finds what the caller wants. Each engine's
/// Reed–Solomon check decides every read; preprocessing only helps it find
/// and sample a code, so no step can turn a bad read into a text. `workers`
/// (a fixed two, whatever the machine's core count) climb the ladder side
/// by side, each with its own zbar scanner.
public struct QRReader: Sendable {
    /// Workers climbing the ladder at once.
    public static let workers = 2

    public enum Engine: String, Sendable { case zxing, zbar }

    /// A step's image, and how its pixels map back to the photo's.
    struct Rendition: Sendable {
        var image: GrayImage
        var toPhoto: @Sendable (ImagePoint) -> ImagePoint

        /// `tiles` side by side on one white canvas, `gap` pixels around and
        /// between them, each with the way back to the photo from a point on
        /// it (in the tile's own pixels); a point goes back through the tile
        /// it lies on, or the nearest. Nil for no tile.
        static func sideBySide(_ tiles: [Rendition], gap: Int) -> Rendition? {
            guard !tiles.isEmpty else { return nil }
            let width = tiles.reduce(gap) { $0 + $1.image.width + gap }
            let height = (tiles.map(\.image.height).max() ?? 0) + 2 * gap
            var canvas = GrayImage(width: width, height: height, fill: 255)
            var placed: [(x0: Int, width: Int, toPhoto: @Sendable (ImagePoint) -> ImagePoint)] = []
            var x0 = gap
            for t in tiles {
                let w = t.image.width
                for y in 0..<t.image.height {
                    let dst = (y + gap) * width + x0
                    canvas.pixels.replaceSubrange(dst..<(dst + w), with: t.image.pixels[(y * w)..<(y * w + w)])
                }
                placed.append((x0, w, t.toPhoto))
                x0 += w + gap
            }
            let tilesPlaced = placed, top = Double(gap)
            return Rendition(image: canvas, toPhoto: { p in
                // Never nil: a canvas has a tile.
                let t = tilesPlaced.min { abs(p.x - Double($0.x0 + $0.width / 2)) < abs(p.x - Double($1.x0 + $1.width / 2)) }!
                return t.toPhoto(ImagePoint(x: p.x - Double(t.x0), y: p.y - top))
            })
        }
    }

    /// One rung of the ladder: an engine, and how to make its image from the photo.
    public struct Step: Sendable {
        public var name: String
        public var engine: Engine
        var zxingOptions: ZXingScanner.Options = .standard
        var make: @Sendable (Rungs) -> Rendition?
    }

    /// What a scan found: the codes of the steps up to the first that
    /// satisfied the caller, each once, in reading order.
    public struct Result: Sendable {
        public var codes: [ScannedCode]
        /// The step that satisfied the caller (engine/rung), nil if none did.
        public var step: String?
        /// Every code seen on the steps that ran, in reading order.
        public var seen: [ScannedCode]
        public var stepsTried: Int
        /// Structured-append sequences seen with a part missing (or two
        /// different parts at one index), and so left out of `codes`.
        public var incompleteSequences: [QRSequence.Incomplete]
        public var texts: [String] { codes.map(\.text) }
    }

    /// The most pixels the preprocessing ladder works on: 8 megapixels. A
    /// larger photo is scanned once as it is, then climbs the ladder as a
    /// box-filtered copy this size, so the working copies stay near 200 MB
    /// whatever the photo.
    public static let maxWorkingPixels = 8_000_000

    public init() {}

    /// Scans until `accept` says the codes found so far are enough (default:
    /// any code) and no structured-append sequence seen lacks a part.
    public func scan(_ image: GrayImage, accept: @escaping @Sendable ([ScannedCode]) -> Bool = { !$0.isEmpty }) -> Result {
        var working = image
        var factor = 1
        var steps: [Step] = []
        if image.pixelCount > QRReader.maxWorkingPixels {
            factor = 2
            while image.pixelCount / (factor * factor) > QRReader.maxWorkingPixels { factor += 1 }
            working = image.downscaled(by: factor)
            steps.append(Step(name: "full-size", engine: .zxing, make: { _ in Rendition(image: image, toPhoto: { $0 }) }))
        }
        let f = Double(factor)
        steps += QRReader.ladder(for: working).map { s in
            guard factor > 1 else { return s }
            var t = s
            t.make = { r in s.make(r).map { v in Rendition(image: v.image, toPhoto: { p in let q = v.toPhoto(p); return ImagePoint(x: q.x * f, y: q.y * f) }) } }
            return t
        }
        var result = run(steps, on: working, plain: QRReader.plainSteps + (factor > 1 ? 1 : 0), accept: accept)
        // Codes only zbar read get their segments from ZXing where it can re-read them.
        let reread = { (c: ScannedCode) in ZBarReread.withSegments(c, in: image) }
        result.codes = result.codes.map(reread)
        result.seen = result.seen.map(reread)
        return result
    }

    /// Every step of the ladder, each on its own: which steps read which
    /// codes (for measuring the ladder, not for use).
    public func eachStep(_ image: GrayImage) -> [(step: String, codes: [ScannedCode])] {
        let rungs = Rungs(base: image)
        let zbar = ZBarScanner()
        return QRReader.ladder(for: image).map { s in ("\(s.engine.rawValue)/\(s.name)", QRReader.read(s, rungs, zbar)) }
    }

    static func read(_ step: Step, _ rungs: Rungs, _ zbar: ZBarScanner) -> [ScannedCode] {
        guard let r = step.make(rungs) else { return [] }
        var found = step.engine == .zxing ? ZXingScanner(options: step.zxingOptions).scan(r.image) : zbar.scan(r.image)
        // A sequence's part from zbar: ZXing re-reads it for its header, or it is not used.
        found = found.compactMap { c in
            guard c.isUnheadedPart else { return c }
            let headed = ZBarReread.withSegments(c, in: r.image)
            return headed.stream?.structuredAppend != nil ? headed : nil
        }
        return found.map { c in
            var c = c
            c.corners = c.corners.map(r.toPhoto)
            return c
        }
    }

    func run(_ ladder: [Step], on working: GrayImage, plain: Int, accept: @escaping @Sendable ([ScannedCode]) -> Bool) -> Result {
        let state = LadderState()
        let rungs = Rungs(base: working)
        DispatchQueue.concurrentPerform(iterations: QRReader.workers) { _ in
            let zbar = ZBarScanner()
            while let i = state.next(limit: ladder.count) {
                // Past the plain steps, an image with nothing finder-like in it, at
                // the ladder's scales or the small codes', ends the climb.
                if i >= plain, !rungs.hasFinderLikePatterns, !rungs.hasSmallFinders { state.stop(); break }
                state.record(index: i, found: QRReader.read(ladder[i], rungs, zbar), accept: accept)
            }
        }
        return state.result(steps: ladder, accept: accept)
    }

    /// The codes of several steps, each once, in reading order, with the
    /// parts of every complete structured-append sequence joined into one
    /// code and incomplete sequences left out.
    static func merge(_ lists: [[ScannedCode]]) -> [ScannedCode] { mergeWithSequences(lists).codes }

    static func mergeWithSequences(_ lists: [[ScannedCode]]) -> (codes: [ScannedCode], incomplete: [QRSequence.Incomplete]) {
        var out: [ScannedCode] = []
        for list in lists {
            for var c in list {
                if let k = out.firstIndex(where: { $0.isSameCode(as: c) }) {
                    // A read with a parsed bitstream says more than zbar's bytes.
                    if out[k].stream == nil, c.stream != nil { c.disagreeing = out[k].disagreeing; out[k] = c }
                } else if let k = out.firstIndex(where: { $0.isSamePlace(as: c) }) {
                    // Other bytes in the same place: zbar's ECI data (converted
                    // by zbar) when the texts agree, else two reads of one code
                    // that disagree, and which is right is not ours to guess.
                    if out[k].text == c.text {
                        if out[k].stream == nil, c.stream != nil { c.disagreeing = out[k].disagreeing; out[k] = c }
                    } else {
                        for t in [c.text] + c.disagreeing where t != out[k].text && !out[k].disagreeing.contains(t) { out[k].disagreeing.append(t) }
                    }
                } else {
                    out.append(c)
                }
            }
        }
        return QRSequence.join(out)
    }

    /// Hands out step indexes in order and keeps what was found; once the
    /// codes of steps 0...k satisfy the caller, no step after k starts, and
    /// the result is those steps' codes (so it does not depend on timing).
    final class LadderState: @unchecked Sendable {
        private let lock = ThreadLock()
        private var nextIndex = 0
        private var found: [Int: [ScannedCode]] = [:]
        private var accepted: Int?
        private var stopped = false
        private var tried = 0

        func stop() {
            lock.lock(); defer { lock.unlock() }
            stopped = true
        }

        func next(limit: Int) -> Int? {
            lock.lock(); defer { lock.unlock() }
            // Read only when accepted is not nil.
            guard !stopped, nextIndex < limit, accepted == nil || nextIndex <= accepted! else { return nil }
            nextIndex += 1
            return nextIndex - 1
        }

        func record(index: Int, found codes: [ScannedCode], accept: ([ScannedCode]) -> Bool) {
            lock.lock(); defer { lock.unlock() }
            found[index] = codes
            tried += 1
            // The earliest k whose steps 0...k have all finished and together satisfy the caller.
            var k = 0
            var prefix: [[ScannedCode]] = []
            while let f = found[k], accepted.map({ k < $0 }) ?? true {
                prefix.append(f)
                // A sequence with a part missing holds the climb: a later step may read the part.
                if !f.isEmpty {
                    let merged = QRReader.mergeWithSequences(prefix)
                    if merged.incomplete.isEmpty, accept(merged.codes) { accepted = k; break }
                }
                k += 1
            }
        }

        func result(steps: [Step], accept: ([ScannedCode]) -> Bool) -> Result {
            lock.lock(); defer { lock.unlock() }
            let upTo = accepted ?? (steps.count - 1)
            let kept = (0...max(0, upTo)).compactMap { found[$0] }
            let all = found.keys.sorted().compactMap { found[$0] }
            let seen = QRReader.mergeWithSequences(all)
            // A climb that ended unaccepted (a sequence never completed) still
            // gives what it read, if that satisfies the caller.
            let codes = accepted == nil ? (seen.codes.isEmpty || !accept(seen.codes) ? [] : seen.codes) : QRReader.merge(kept)
            return Result(codes: codes, step: accepted.map { "\(steps[$0].engine.rawValue)/\(steps[$0].name)" },
                          seen: seen.codes, stepsTried: tried, incompleteSequences: seen.incomplete)
        }
    }

    /// The steps every image gets (ZXing on the image, half size, mirrored
    /// and inverted); the rest of the ladder runs only where something finder-like is.
    static let plainSteps = 4

    /// Intermediate images shared between steps, each made once, by whichever
    /// worker needs it first.
    final class Rungs: @unchecked Sendable {
        let base: GrayImage
        private var cache: [String: GrayImage] = [:]
        private var making: Set<String> = []
        private let ready = ThreadCondition()

        init(base: GrayImage) { self.base = base }

        func cached(_ key: String, _ make: (Rungs) -> GrayImage) -> GrayImage {
            ready.lock()
            while true {
                if let v = cache[key] { ready.unlock(); return v }
                if !making.contains(key) { break }
                ready.wait()
            }
            making.insert(key)
            ready.unlock()
            let v = make(self)
            ready.lock()
            cache[key] = v
            making.remove(key)
            ready.broadcast()
            ready.unlock()
            return v
        }

        var half: GrayImage { cached("half") { $0.base.downscaled(by: 2) } }
        var inverted: GrayImage { cached("inverted") { $0.base.inverted() } }
        func normalized(_ r: Int) -> GrayImage { cached("normalized") { $0.base.locallyNormalized(radius: r) } }
        func halfNormalized(_ r: Int) -> GrayImage { cached("half-normalized") { $0.half.locallyNormalized(radius: r) } }
        /// Whether the image holds anything like a finder pattern's 1:1:3:1:1
        /// (dark on light or light on dark, at full or half size); an image
        /// without one holds no code any step could read.
        var hasFinderLikePatterns: Bool {
            finderLike.lock(); defer { finderLike.unlock() }
            if let v = finderLikeValue { return v }
            let r = max(8, min(base.width, base.height) / 16)
            let t = threshold(r)
            let v = [t, t.inverted()].contains { QRRectifier.findFinders($0).count >= 2 }
                || (min(base.width, base.height) >= 240 && [half.adaptiveThreshold(radius: max(6, r / 2), offset: 4)].contains {
                    QRRectifier.findFinders($0).count >= 2 || QRRectifier.findFinders($0.inverted()).count >= 2
                })
            finderLikeValue = v
            return v
        }
        private let finderLike = ThreadLock()
        private var finderLikeValue: Bool?

        /// The small codes' canvas (QRSmallCodes), nil when the photo shows
        /// no finder triple of small modules; made once.
        var small: Rendition? {
            smallLock.lock(); defer { smallLock.unlock() }
            if let v = smallValue { return v }
            let v = QRSmallCodes.canvas(base, QRSmallCodes.regions(in: base))
            smallValue = .some(v)
            return v
        }
        /// Whether the photo shows finder patterns of small modules.
        var hasSmallFinders: Bool { small != nil }
        private let smallLock = ThreadLock()
        private var smallValue: Rendition??

        func normalizedFine(_ r: Int) -> GrayImage { cached("normalized-fine") { $0.base.locallyNormalized(radius: r) } }
        func threshold(_ r: Int) -> GrayImage { cached("threshold") { $0.base.adaptiveThreshold(radius: r, offset: 4) } }
    }

    /// The ladder, most useful for its cost first: ordered by measurement on
    /// bench/40's corpus (upright, turned and mirrored), each step taken by
    /// how many codes it reads that no step before it does, per millisecond.
    /// A ZXing pass costs about 5 ms on a 1024×768 photo and a zbar pass
    /// 20-30 ms, so ZXing's rungs come first and zbar keeps the few where it
    /// reads what ZXing does not (half size, the redrawn code). ZXing-C++
    /// 1.4 misses many mirrored codes, so its main rungs have mirrored
    /// twins. A step that cannot help an image of this size is left out.
    static func ladder(for image: GrayImage) -> [Step] {
        let minSide = min(image.width, image.height)
        let maxSide = max(image.width, image.height)
        let w = Double(image.width)
        var steps: [Step] = []
        @Sendable func same(_ img: GrayImage) -> Rendition { Rendition(image: img, toPhoto: { $0 }) }
        @Sendable func scaled(_ img: GrayImage, _ s: Double) -> Rendition { Rendition(image: img, toPhoto: { ImagePoint(x: $0.x * s, y: $0.y * s) }) }
        @Sendable func mirrored(_ img: GrayImage) -> Rendition { Rendition(image: img.mirrored(), toPhoto: { ImagePoint(x: w - $0.x, y: $0.y) }) }
        func add(_ engine: Engine, _ name: String, _ options: ZXingScanner.Options = .standard, _ make: @escaping @Sendable (Rungs) -> Rendition?) {
            steps.append(Step(name: name, engine: engine, zxingOptions: options, make: make))
        }
        let r = max(8, minSide / 16)
        let halves = minSide >= 240
        // Without ZXing's own downscaling where the image already is small (half size) or a
        // downscale adds nothing the half-size rung has not read.
        let harder: ZXingScanner.Options = [.tryHarder]
        if halves { add(.zxing, "half", harder) { scaled($0.half, 2) } } else { add(.zxing, "gray") { same($0.base) } }
        add(.zxing, "gray-mirrored") { mirrored($0.base) }
        add(.zxing, "inverted", harder) { same($0.inverted) }
        if halves { add(.zxing, "gray", harder) { same($0.base) } }
        // ZXing's other binarizer: one threshold for the whole image (low contrast, soft edges).
        add(.zxing, "gray-global", [.tryHarder, .tryDownscale, .globalHistogram]) { same($0.base) }
        add(.zxing, "inverted-mirrored") { mirrored($0.inverted) }
        if halves { add(.zbar, "half") { scaled($0.half, 2) } }
        // Codes of one to three pixels a module, cut out and drawn larger.
        add(.zxing, "small", harder) { $0.small }
        // A small window: local contrast at the scale of a few modules (low contrast, glare).
        add(.zxing, "normalized-fine") { same($0.normalizedFine(max(4, r / 3))) }
        // (The small codes' other steps come a step later than the first, so
        // that the other worker is not held waiting while their regions are found.)
        add(.zbar, "small") { $0.small }
        // One threshold for a whole redrawn code: faint codes ZXing's block binarizer takes for blank.
        add(.zxing, "small-global", [.tryHarder, .globalHistogram]) { $0.small }
        // Their mirrored twin (rows become columns), for the mirrored codes ZXing misses.
        if maxSide >= QRSmallCodes.minTransposedSide {
            add(.zxing, "small-transposed", harder) { r in
                r.small.map { v in Rendition(image: v.image.transposed(), toPhoto: { p in v.toPhoto(ImagePoint(x: p.y, y: p.x)) }) }
            }
        }
        add(.zxing, "sharpened") { same($0.base.sharpened(radius: 2, amount: 150)) }
        if halves { add(.zbar, "half-normalized-inverted") { scaled($0.halfNormalized(max(6, r / 2)).inverted(), 2) } }
        add(.zxing, "blurred") { same($0.base.boxBlurred(radius: 1)) }
        add(.zxing, "normalized-mirrored") { mirrored($0.normalized(r)) }
        add(.zxing, "normalized", harder) { same($0.normalized(r)) }
        add(.zxing, "normalized-inverted") { same($0.normalized(r).inverted()) }
        add(.zbar, "rectified") { QRRectifier.rectify(gray: $0.base, binary: $0.threshold(r)) }
        add(.zbar, "normalized-inverted") { same($0.normalized(r).inverted()) }
        add(.zxing, "normalized-fine-mirrored") { mirrored($0.normalizedFine(max(4, r / 3))) }
        // Enlarging costs four scans' worth: for images small enough that their modules may be too.
        if maxSide <= 1100 { add(.zxing, "double") { scaled($0.base.resized(width: $0.base.width * 2, height: $0.base.height * 2), 0.5) } }
        return steps
    }
}
