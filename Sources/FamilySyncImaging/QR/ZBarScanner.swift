import FamilySync
import CZBar

/// One zbar image scanner, set up for QR codes only and in binary mode: zbar
/// hands back the bytes of byte-mode data as they are, instead of guessing a
/// character set (its guesses turn UTF-8 into mojibake). Data a code
/// declares with an ECI is still converted to UTF-8 by zbar, and segments
/// reach us joined, so `QRText` decides these bytes as undeclared data.
/// Not Sendable: a scanner belongs to one thread.
final class ZBarScanner {
    private let handle: OpaquePointer
    private static let y800 = fs_zbar_fourcc_y800()

    init() {
        handle = zbar_image_scanner_create()
        zbar_image_scanner_set_config(handle, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        zbar_image_scanner_set_config(handle, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        zbar_image_scanner_set_config(handle, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
    }

    deinit { zbar_image_scanner_destroy(handle) }

    /// Every QR code zbar finds. zbar joins a structured-append sequence
    /// itself, but by index alone (two sequences on one parity give it a
    /// text made of both), so a joined read is handed over as its parts,
    /// each marked `isUnheadedPart` for the reader to re-read with ZXing,
    /// whose bitstream carries the part's header.
    func scan(_ image: GrayImage) -> [ScannedCode] {
        guard image.width > 0, image.height > 0 else { return [] }
        guard let zimg = zbar_image_create() else { return [] }
        defer { zbar_image_destroy(zimg) }
        zbar_image_set_format(zimg, ZBarScanner.y800)
        zbar_image_set_size(zimg, UInt32(image.width), UInt32(image.height))
        return image.pixels.withUnsafeBytes { buf -> [ScannedCode] in
            zbar_image_set_data(zimg, buf.baseAddress, UInt(buf.count), nil)
            let n = zbar_scan_image(handle, zimg)
            guard n > 0 else { return [] }
            var out: [ScannedCode] = []
            var sym = zbar_image_first_symbol(zimg)
            while let s = sym {
                defer { sym = zbar_symbol_next(s) }
                guard zbar_symbol_get_type(s) == ZBAR_QRCODE || zbar_symbol_get_type(s) == ZBAR_PARTIAL else { continue }
                if let parts = zbar_symbol_get_components(s), zbar_symbol_set_first_symbol(parts) != nil {
                    var c = zbar_symbol_set_first_symbol(parts)
                    while let p = c {
                        defer { c = zbar_symbol_next(p) }
                        guard zbar_symbol_get_type(p) == ZBAR_QRCODE, var part = ZBarScanner.code(p) else { continue }
                        part.isUnheadedPart = true
                        out.append(part)
                    }
                } else if zbar_symbol_get_type(s) == ZBAR_QRCODE, let code = ZBarScanner.code(s) {
                    out.append(code)
                }
            }
            return out
        }
    }

    private static func code(_ s: OpaquePointer) -> ScannedCode? {
        let len = Int(zbar_symbol_get_data_length(s))
        guard let p = zbar_symbol_get_data(s) else { return nil }
        let bytes = p.withMemoryRebound(to: UInt8.self, capacity: len) { Array(UnsafeBufferPointer(start: $0, count: len)) }
        return ScannedCode(zbarBytes: bytes, corners: corners(s))
    }

    /// zbar lists a code's corners top-left, bottom-left, bottom-right,
    /// top-right; ours go clockwise from the top-left.
    private static func corners(_ s: OpaquePointer) -> [ImagePoint] {
        let n = Int(zbar_symbol_get_loc_size(s))
        let pts = (0..<n).map { ImagePoint(x: Double(zbar_symbol_get_loc_x(s, UInt32($0))), y: Double(zbar_symbol_get_loc_y(s, UInt32($0)))) }
        return n == 4 ? [pts[0], pts[3], pts[2], pts[1]] : pts
    }

}
