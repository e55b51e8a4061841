import FamilySync
import Foundation

/// Finds QR codes in a photo: zbar, run on a ladder of preprocessed versions
/// of the image in order of cost and usefulness, until a step finds what the
/// caller wants. zbar's Reed–Solomon check decides every read; preprocessing
/// only helps it find and sample the code, so no step can turn a bad read
/// into a text. `workers` (a fixed two, whatever the machine's core count)
/// climb the ladder side by side, each with its own zbar scanner.
public struct QRReader: Sendable {
    /// Workers climbing the ladder at once.
    public static let workers = 2

    /// One rung of the ladder: a name and how to make its image from the photo.
    public struct Step: Sendable {
        public var name: String
        var make: @Sendable (Rungs) -> GrayImage?
    }

    /// What a scan found: the payloads of the first step that satisfied the
    /// caller, and every payload seen on the way.
    public struct Result: Sendable {
        public var payloads: [[UInt8]]
        public var step: String?
        public var seen: [[UInt8]]
        public var stepsTried: Int
    }

    /// The most pixels the preprocessing ladder works on: 8 megapixels. A
    /// larger photo is scanned once as it is, then climbs the ladder as a
    /// box-filtered copy this size, so the working copies stay near 200 MB
    /// whatever the photo.
    public static let maxWorkingPixels = 8_000_000

    public init() {}

    /// Scans until `accept` says a step's payloads are enough (default: any code).
    public func scan(_ image: GrayImage, accept: @escaping @Sendable ([[UInt8]]) -> Bool = { !$0.isEmpty }) -> Result {
        var working = image
        var steps: [Step] = []
        if image.pixelCount > QRReader.maxWorkingPixels {
            var f = 2
            while image.pixelCount / (f * f) > QRReader.maxWorkingPixels { f += 1 }
            working = image.downscaled(by: f)
            steps.append(Step(name: "full-size", make: { _ in image }))
        }
        steps += QRReader.ladder(for: working)
        let ladder = steps
        let state = LadderState()
        let rungs = Rungs(base: working)
        DispatchQueue.concurrentPerform(iterations: QRReader.workers) { _ in
            let scanner = ZBarScanner()
            while let i = state.next(limit: ladder.count) {
                var found: [[UInt8]] = []
                // A redrawn montage can hold one code several times: each text once.
                for p in ladder[i].make(rungs).map({ scanner.scan($0) }) ?? [] where !found.contains(p) { found.append(p) }
                state.record(index: i, found: found, accepted: !found.isEmpty && accept(found))
            }
        }
        return state.result(steps: ladder)
    }

    /// Hands out step indexes in order and keeps what was found; once a step
    /// is accepted, no later step starts (earlier ones still finish, and the
    /// earliest accepted step wins, so the result does not depend on timing).
    final class LadderState: @unchecked Sendable {
        private let lock = NSLock()
        private var nextIndex = 0
        private var best: (index: Int, payloads: [[UInt8]])?
        private var seen: [(Int, [UInt8])] = []
        private var tried = 0

        func next(limit: Int) -> Int? {
            lock.lock(); defer { lock.unlock() }
            guard nextIndex < limit, best == nil || nextIndex < best!.index else { return nil }
            nextIndex += 1
            tried += 1
            return nextIndex - 1
        }

        func record(index: Int, found: [[UInt8]], accepted: Bool) {
            lock.lock(); defer { lock.unlock() }
            for p in found { seen.append((index, p)) }
            if accepted, best == nil || index < best!.index { best = (index, found) }
        }

        func result(steps: [Step]) -> Result {
            lock.lock(); defer { lock.unlock() }
            var ordered: [[UInt8]] = []
            for (_, p) in seen.sorted(by: { $0.0 < $1.0 }) where !ordered.contains(p) { ordered.append(p) }
            return Result(payloads: best?.payloads ?? [], step: best.map { steps[$0.index].name }, seen: ordered, stepsTried: tried)
        }
    }

    /// Intermediate images shared between steps, each made once, by whichever
    /// worker needs it first.
    final class Rungs: @unchecked Sendable {
        let base: GrayImage
        private let lock = NSLock()
        private var cache: [String: GrayImage] = [:]
        private var making: Set<String> = []
        private let ready = NSCondition()

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
        var stretched: GrayImage { cached("stretched") { $0.base.contrastStretched() } }
        func normalized(_ r: Int) -> GrayImage { cached("normalized") { $0.base.locallyNormalized(radius: r) } }
        func halfNormalized(_ r: Int) -> GrayImage { cached("half-normalized") { $0.half.locallyNormalized(radius: r) } }
        func threshold(_ r: Int) -> GrayImage { cached("threshold") { $0.base.adaptiveThreshold(radius: r, offset: 4) } }
    }

    /// The ladder, most useful for its cost first (measured on the benchmark
    /// corpus: most codes read as they are, then inverted, then at half size).
    /// A step that cannot help an image of this size is left out.
    static func ladder(for image: GrayImage) -> [Step] {
        let minSide = min(image.width, image.height)
        let maxSide = max(image.width, image.height)
        var steps: [Step] = []
        func add(_ name: String, _ make: @escaping @Sendable (Rungs) -> GrayImage?) { steps.append(Step(name: name, make: make)) }
        let r = max(8, minSide / 16)
        let halves = minSide >= 240
        add("gray") { $0.base }
        add("inverted") { $0.base.inverted() }
        if halves { add("half") { $0.half } }
        add("sharpened") { $0.base.sharpened(radius: 2, amount: 150) }
        add("rectified") { QRRectifier.rectify(gray: $0.base, binary: $0.threshold(r)) }
        add("normalized") { $0.normalized(r) }
        add("normalized-inverted") { $0.normalized(r).inverted() }
        add("rectified-inverted") { QRRectifier.rectify(gray: $0.base.inverted(), binary: $0.threshold(r).inverted()) }
        if halves {
            add("half-normalized") { $0.halfNormalized(max(6, r / 2)) }
            add("half-normalized-inverted") { $0.halfNormalized(max(6, r / 2)).inverted() }
        }
        add("stretched") { $0.stretched }
        // Small images only: enlarging costs four scans' worth.
        if maxSide <= 800 { add("double") { $0.base.resized(width: $0.base.width * 2, height: $0.base.height * 2) } }
        add("threshold") { $0.threshold(r) }
        add("threshold-inverted") { $0.threshold(r).inverted() }
        return steps
    }
}
