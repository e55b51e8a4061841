/// Finds QR codes in a photo: zbar, run on a ladder of preprocessed versions
/// of the image in order of cost, until a step finds what the caller wants.
/// zbar's Reed–Solomon check decides every read; preprocessing only helps it
/// find and sample the code, so no step can turn a bad read into a text.
/// Not Sendable (it owns a zbar scanner): one reader per thread.
public final class QRReader {
    /// One rung of the ladder.
    public struct Step: Sendable {
        public var name: String
        /// Makes the image to scan from the cache of earlier results.
        var make: @Sendable (inout Rungs) -> GrayImage?
    }

    /// What a scan found: the payloads of the first step that satisfied the
    /// caller, and every other payload seen on the way.
    public struct Result: Sendable {
        public var payloads: [[UInt8]]
        public var step: String?
        public var seen: [[UInt8]]
        public var stepsTried: Int
    }

    private let scanner = ZBarScanner()
    public init() {}

    /// Scans until `accept` says a step's payloads are enough (default: any code).
    public func scan(_ image: GrayImage, accept: ([[UInt8]]) -> Bool = { !$0.isEmpty }) -> Result {
        var rungs = Rungs(base: image)
        var seen: [[UInt8]] = []
        var tried = 0
        for step in QRReader.ladder(for: image) {
            guard let img = step.make(&rungs) else { continue }
            tried += 1
            let found = scanner.scan(img)
            for p in found where !seen.contains(p) { seen.append(p) }
            if !found.isEmpty, accept(found) {
                return Result(payloads: found, step: step.name, seen: seen, stepsTried: tried)
            }
        }
        return Result(payloads: [], step: nil, seen: seen, stepsTried: tried)
    }

    /// Intermediate images shared between steps, made at most once.
    struct Rungs {
        let base: GrayImage
        private var cache: [String: GrayImage] = [:]
        init(base: GrayImage) { self.base = base }
        mutating func get(_ key: String, _ make: (inout Rungs) -> GrayImage) -> GrayImage {
            if let v = cache[key] { return v }
            let v = make(&self)
            cache[key] = v
            return v
        }
    }

    /// The ladder, cheapest and most often useful first. Sizes are chosen
    /// from the image: a step that cannot help an image of this size is left out.
    static func ladder(for image: GrayImage) -> [Step] {
        let minSide = min(image.width, image.height)
        let maxSide = max(image.width, image.height)
        var steps: [Step] = []
        func add(_ name: String, _ make: @escaping @Sendable (inout Rungs) -> GrayImage?) { steps.append(Step(name: name, make: make)) }
        let r = max(8, minSide / 16)
        add("gray") { $0.base }
        if minSide >= 240 { add("half") { $0.get("half") { $0.base.downscaled(by: 2) } } }
        add("stretched") { $0.get("stretched") { $0.base.contrastStretched() } }
        add("inverted") { $0.get("stretched") { $0.base.contrastStretched() }.inverted() }
        add("normalized") { $0.get("normalized") { $0.base.locallyNormalized(radius: r) } }
        add("normalized-inverted") { $0.get("normalized") { $0.base.locallyNormalized(radius: r) }.inverted() }
        if minSide >= 240 {
            add("half-normalized") { $0.get("half-normalized") { $0.get("half") { $0.base.downscaled(by: 2) }.locallyNormalized(radius: max(6, r / 2)) } }
            add("half-normalized-inverted") { $0.get("half-normalized") { $0.get("half") { $0.base.downscaled(by: 2) }.locallyNormalized(radius: max(6, r / 2)) }.inverted() }
        }
        add("threshold") { $0.get("threshold") { $0.base.adaptiveThreshold(radius: r, offset: 4) } }
        add("threshold-inverted") { $0.get("threshold") { $0.base.adaptiveThreshold(radius: r, offset: 4) }.inverted() }
        if maxSide <= 1400 {
            add("double") { $0.get("double") { $0.base.resized(width: $0.base.width * 2, height: $0.base.height * 2) } }
            add("double-normalized") { $0.get("double") { $0.base.resized(width: $0.base.width * 2, height: $0.base.height * 2) }.locallyNormalized(radius: r * 2) }
        }
        add("smoothed") { $0.get("smoothed") { $0.base.boxBlurred(radius: 1) }.locallyNormalized(radius: r) }
        add("sharpened") { $0.base.sharpened(radius: 2, amount: 150) }
        if minSide >= 480 {
            add("quarter") { $0.get("quarter") { $0.get("half") { $0.base.downscaled(by: 2) }.downscaled(by: 2) } }
            add("quarter-normalized") { $0.get("quarter") { $0.get("half") { $0.base.downscaled(by: 2) }.downscaled(by: 2) }.locallyNormalized(radius: max(6, r / 4)) }
        }
        return steps
    }
}
