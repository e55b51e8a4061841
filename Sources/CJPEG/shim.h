#ifndef FAMILY_SYNC_CJPEG_SHIM_H
#define FAMILY_SYNC_CJPEG_SHIM_H
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>

/* libjpeg reports errors by calling error_exit, which must not return; Swift
   cannot unwind a longjmp, so the whole decode and encode live here, behind a
   setjmp, and hand back a status and a message. Warnings are counted, never
   printed. */

struct fs_jpeg_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int warnings;
    int truncated;
    int max_scans;
    int too_many_scans;
};

static inline void fs_jpeg_error_exit(j_common_ptr cinfo) {
    struct fs_jpeg_error *err = (struct fs_jpeg_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

static inline void fs_jpeg_emit_message(j_common_ptr cinfo, int level) {
    struct fs_jpeg_error *err = (struct fs_jpeg_error *)cinfo->err;
    if (level < 0) {
        err->warnings++;
        if (cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = 1;
    }
}

static inline void fs_jpeg_progress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    struct fs_jpeg_error *err = (struct fs_jpeg_error *)cinfo->err;
    if (err->max_scans > 0 && d->input_scan_number > err->max_scans) {
        err->too_many_scans = 1;
        snprintf(err->message, sizeof err->message, "more than %d progressive scans", err->max_scans);
        longjmp(err->jump, 1);
    }
}

enum {
    FS_JPEG_OK = 0,
    FS_JPEG_ERROR = 1,
    FS_JPEG_TOO_LARGE = 2,
    FS_JPEG_NO_MEMORY = 3,
};

/* Decodes a JPEG held in memory to 8-bit grayscale. The dimensions are
   checked against max_pixels before any pixel buffer is allocated. On
   FS_JPEG_OK, *out holds width*height bytes the caller frees with free(). */
static inline int fs_jpeg_decode_gray(const unsigned char *data, unsigned long size,
                                      unsigned long long max_pixels, int max_scans, long max_memory,
                                      unsigned char **out, int *width, int *height,
                                      int *truncated, int *warnings, char *message, size_t message_size) {
    struct jpeg_decompress_struct cinfo;
    struct fs_jpeg_error err;
    struct jpeg_progress_mgr progress;
    unsigned char *volatile pixels = NULL;
    unsigned char *volatile row = NULL;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&err, 0, sizeof err);
    *out = NULL;
    *width = 0;
    *height = 0;
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = fs_jpeg_error_exit;
    err.pub.emit_message = fs_jpeg_emit_message;
    err.max_scans = max_scans;
    if (setjmp(err.jump)) {
        snprintf(message, message_size, "%s", err.message);
        *truncated = err.truncated;
        *warnings = err.warnings;
        free(pixels);
        free(row);
        jpeg_destroy_decompress(&cinfo);
        return FS_JPEG_ERROR;
    }
    jpeg_create_decompress(&cinfo);
    if (max_memory > 0) cinfo.mem->max_memory_to_use = max_memory;
    progress.progress_monitor = fs_jpeg_progress;
    cinfo.progress = &progress;
    jpeg_mem_src(&cinfo, data, size);
    jpeg_read_header(&cinfo, TRUE);
    *width = (int)cinfo.image_width;
    *height = (int)cinfo.image_height;
    if ((unsigned long long)cinfo.image_width * (unsigned long long)cinfo.image_height > max_pixels) {
        jpeg_destroy_decompress(&cinfo);
        return FS_JPEG_TOO_LARGE;
    }
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_GRAYSCALE;
    jpeg_start_decompress(&cinfo);
    size_t w = cinfo.output_width, h = cinfo.output_height;
    pixels = (unsigned char *)malloc(w * h ? w * h : 1);
    row = (unsigned char *)malloc(w * (size_t)cinfo.output_components + 1);
    if (!pixels || !row) {
        free(pixels);
        free(row);
        jpeg_destroy_decompress(&cinfo);
        return FS_JPEG_NO_MEMORY;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        size_t y = cinfo.output_scanline;
        JSAMPROW rows[1];
        if (cmyk) {
            rows[0] = row;
            jpeg_read_scanlines(&cinfo, rows, 1);
            /* Adobe CMYK JPEGs store inverted ink values: 255 means no ink. */
            for (size_t x = 0; x < w; x++) {
                unsigned c = row[4 * x], m = row[4 * x + 1], yy = row[4 * x + 2], k = row[4 * x + 3];
                unsigned r = c * k / 255, g = m * k / 255, b = yy * k / 255;
                pixels[y * w + x] = (unsigned char)((r * 77 + g * 150 + b * 29) >> 8);
            }
        } else {
            rows[0] = pixels + y * w;
            jpeg_read_scanlines(&cinfo, rows, 1);
        }
    }
    jpeg_finish_decompress(&cinfo);
    *truncated = err.truncated;
    *warnings = err.warnings;
    *width = (int)w;
    *height = (int)h;
    free(row);
    jpeg_destroy_decompress(&cinfo);
    *out = pixels;
    return FS_JPEG_OK;
}

/* Encodes 8-bit gray (components 1) or RGB (components 3) pixels as a JPEG in
   memory; *out is freed by the caller with free(). */
static inline int fs_jpeg_encode(const unsigned char *pixels, int width, int height, int components,
                                 int quality, int progressive, unsigned char **out, unsigned long *out_size,
                                 char *message, size_t message_size) {
    struct jpeg_compress_struct cinfo;
    struct fs_jpeg_error err;
    unsigned char *volatile buffer = NULL;
    unsigned long size = 0;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&err, 0, sizeof err);
    *out = NULL;
    *out_size = 0;
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = fs_jpeg_error_exit;
    err.pub.emit_message = fs_jpeg_emit_message;
    if (setjmp(err.jump)) {
        snprintf(message, message_size, "%s", err.message);
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        return FS_JPEG_ERROR;
    }
    jpeg_create_compress(&cinfo);
    {
        unsigned char *b = NULL;
        jpeg_mem_dest(&cinfo, &b, &size);
        buffer = b;
        cinfo.image_width = (JDIMENSION)width;
        cinfo.image_height = (JDIMENSION)height;
        cinfo.input_components = components;
        cinfo.in_color_space = components == 3 ? JCS_RGB : JCS_GRAYSCALE;
        jpeg_set_defaults(&cinfo);
        jpeg_set_quality(&cinfo, quality, TRUE);
        if (progressive) jpeg_simple_progression(&cinfo);
        jpeg_start_compress(&cinfo, TRUE);
        while (cinfo.next_scanline < cinfo.image_height) {
            JSAMPROW rows[1];
            rows[0] = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * (size_t)width * (size_t)components);
            jpeg_write_scanlines(&cinfo, rows, 1);
        }
        jpeg_finish_compress(&cinfo);
        buffer = b;
    }
    jpeg_destroy_compress(&cinfo);
    *out = buffer;
    *out_size = size;
    return FS_JPEG_OK;
}
#endif
