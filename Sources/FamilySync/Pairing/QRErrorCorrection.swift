/// QR error-correction levels: how much of a code may be damaged and still
/// read (L 7%, M 15%, Q 25%, H 30%).
public enum QRErrorCorrection: String, Sendable, CaseIterable {
    case L, M, Q, H
}
