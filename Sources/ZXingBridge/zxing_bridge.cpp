// The one file that speaks C++ to ZXing-C++ (Debian's libzxing-dev).
#define ZX_USE_UTF8 1
#include "zxing_bridge.h"

#include <ZXing/ReadBarcode.h>

#include <cstdlib>
#include <cstring>
#include <new>

extern "C" int32_t fs_zxing_read(const uint8_t *pixels, int32_t width, int32_t height, int32_t stride, int32_t flags,
                                 fs_zxing_code **out) {
    *out = nullptr;
    if (!pixels || width <= 0 || height <= 0 || stride < width) return 0;
    try {
        ZXing::DecodeHints hints;
        hints.setFormats(ZXing::BarcodeFormat::QRCode)
            .setTryHarder(flags & FS_ZXING_TRY_HARDER)
            .setTryRotate(flags & FS_ZXING_TRY_ROTATE)
            .setTryDownscale(flags & FS_ZXING_TRY_DOWNSCALE)
            .setBinarizer((flags & FS_ZXING_GLOBAL_HISTOGRAM) ? ZXing::Binarizer::GlobalHistogram
                                                               : ZXing::Binarizer::LocalAverage);
        ZXing::ImageView view(pixels, width, height, ZXing::ImageFormat::Lum, stride);
        auto results = ZXing::ReadBarcodes(view, hints);
        int32_t n = 0;
        for (auto &r : results)
            if (r.isValid() && r.format() == ZXing::BarcodeFormat::QRCode) n++;
        if (n == 0) return 0;
        auto codes = static_cast<fs_zxing_code *>(std::calloc(n, sizeof(fs_zxing_code)));
        if (!codes) return 0;
        int32_t i = 0;
        for (auto &r : results) {
            if (!r.isValid() || r.format() != ZXing::BarcodeFormat::QRCode) continue;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
            const auto &raw = r.rawBytes();
#pragma GCC diagnostic pop
            fs_zxing_code &c = codes[i++];
            c.codeword_count = static_cast<int32_t>(raw.size());
            c.codewords = static_cast<uint8_t *>(std::malloc(raw.size() ? raw.size() : 1));
            if (!c.codewords) { fs_zxing_free(codes, i); return 0; }
            if (!raw.empty()) std::memcpy(c.codewords, raw.data(), raw.size());
            auto ec = r.ecLevel();
            c.ec_level = ec.empty() ? '?' : ec[0];
            const auto &p = r.position();
            for (int k = 0; k < 4; k++) { c.corners[2 * k] = p[k].x; c.corners[2 * k + 1] = p[k].y; }
        }
        *out = codes;
        return i;
    } catch (...) {
        return 0;
    }
}

extern "C" void fs_zxing_free(fs_zxing_code *codes, int32_t count) {
    if (!codes) return;
    for (int32_t i = 0; i < count; i++) std::free(codes[i].codewords);
    std::free(codes);
}
