#ifndef FAMILY_SYNC_ZXING_BRIDGE_H
#define FAMILY_SYNC_ZXING_BRIDGE_H
/* A C view of ZXing-C++'s QR reader, for Swift: gray pixels in, for each code
 * found its error-corrected data codewords (the bitstream, which the caller
 * parses itself), its error-correction level and its four corners. */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fs_zxing_code {
    /* Data codewords after Reed-Solomon correction, in bitstream order. */
    uint8_t *codewords;
    int32_t codeword_count;
    /* 'L', 'M', 'Q' or 'H'. */
    char ec_level;
    /* Corners in image pixels: top-left, top-right, bottom-right, bottom-left of the symbol as drawn. */
    int32_t corners[8];
} fs_zxing_code;

enum {
    FS_ZXING_TRY_HARDER = 1,
    FS_ZXING_TRY_ROTATE = 2,
    FS_ZXING_TRY_DOWNSCALE = 4,
    /* Binarize by the global histogram instead of local averages. */
    FS_ZXING_GLOBAL_HISTOGRAM = 8,
};

/* Reads every QR code in a width x height 8-bit gray image (row stride
 * `stride` bytes). Returns how many codes were read and stores an array of
 * them in *out (free it with fs_zxing_free); 0 and NULL when none, or when
 * the reader fails. Never throws. */
int32_t fs_zxing_read(const uint8_t *pixels, int32_t width, int32_t height, int32_t stride, int32_t flags,
                      fs_zxing_code **out);

void fs_zxing_free(fs_zxing_code *codes, int32_t count);

#ifdef __cplusplus
}
#endif
#endif
