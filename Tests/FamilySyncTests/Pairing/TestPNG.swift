/// A small PNG writer for tests, independent of libpng, so the reader is
/// checked against files libpng did not write: every colour type and bit
/// depth, Adam7 interlacing, and hand-made damage. Deflate uses stored
/// blocks only.
enum TestPNG {
    enum ColorType: UInt8 { case gray = 0, rgb = 2, palette = 3, grayAlpha = 4, rgba = 6 }

    /// `samples` holds, per pixel, the channel values for the colour type
    /// (palette: one index), each below 2^depth.
    static func encode(width: Int, height: Int, color: ColorType, depth: Int, samples: [[Int]],
                       palette: [(UInt8, UInt8, UInt8)] = [], interlaced: Bool = false, extraChunks: [(String, [UInt8])] = []) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var ihdr = be32(UInt32(width)) + be32(UInt32(height))
        ihdr += [UInt8(depth), color.rawValue, 0, 0, interlaced ? 1 : 0]
        out += chunk("IHDR", ihdr)
        for (t, d) in extraChunks { out += chunk(t, d) }
        if color == .palette { out += chunk("PLTE", palette.flatMap { [$0.0, $0.1, $0.2] }) }
        var raw: [UInt8] = []
        if interlaced {
            let passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
            for (x0, y0, dx, dy) in passes {
                let pw = (width - x0 + dx - 1) / dx, ph = (height - y0 + dy - 1) / dy
                guard pw > 0, ph > 0 else { continue }
                for py in 0..<ph {
                    let y = y0 + py * dy
                    raw += [0] + packRow((0..<pw).map { samples[y * width + x0 + $0 * dx] }, depth: depth)
                }
            }
        } else {
            for y in 0..<height { raw += [0] + packRow(Array(samples[(y * width)..<((y + 1) * width)]), depth: depth) }
        }
        out += chunk("IDAT", zlibStored(raw))
        out += chunk("IEND", [])
        return out
    }

    static func packRow(_ px: [[Int]], depth: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        if depth >= 8 {
            for p in px { for v in p { if depth == 16 { bytes += [UInt8(v >> 8), UInt8(v & 0xFF)] } else { bytes.append(UInt8(v)) } } }
            return bytes
        }
        var acc = 0, bits = 0
        for p in px {
            for v in p {
                acc = acc << depth | v
                bits += depth
                if bits == 8 { bytes.append(UInt8(acc)); acc = 0; bits = 0 }
            }
        }
        if bits > 0 { bytes.append(UInt8(acc << (8 - bits))) }
        return bytes
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let td = Array(type.utf8) + data
        return be32(UInt32(data.count)) + td + be32(crc32(td))
    }

    static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func crc32(_ d: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in d { c = crcTable[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }

    static func zlibStored(_ d: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var i = 0
        repeat {
            let n = min(65535, d.count - i)
            let last: UInt8 = i + n >= d.count ? 1 : 0
            out += [last, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += d[i..<(i + n)]
            i += n
        } while i < d.count
        var a: UInt32 = 1, b: UInt32 = 0
        for x in d { a = (a + UInt32(x)) % 65521; b = (b + a) % 65521 }
        return out + be32(b << 16 | a)
    }
}
