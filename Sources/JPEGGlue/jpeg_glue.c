#include "jpeg_glue.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>

/* Warnings are counted, never printed. */

struct fs_jpeg_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int warnings;
    int truncated;
    int max_scans;
    int too_many_scans;
};

static void fs_jpeg_error_exit(j_common_ptr cinfo) {
    struct fs_jpeg_error *err = (struct fs_jpeg_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

static void fs_jpeg_emit_message(j_common_ptr cinfo, int level) {
    struct fs_jpeg_error *err = (struct fs_jpeg_error *)cinfo->err;
    if (level < 0) {
        err->warnings++;
        if (cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = 1;
    }
}

static void fs_jpeg_progress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    struct fs_jpeg_error *err = (struct fs_jpeg_error *)cinfo->err;
    if (err->max_scans > 0 && d->input_scan_number > err->max_scans) {
        err->too_many_scans = 1;
        snprintf(err->message, sizeof err->message, "more than %d progressive scans", err->max_scans);
        longjmp(err->jump, 1);
    }
}

int fs_jpeg_decode_gray(const unsigned char *data, unsigned long size,
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
    pixels = (unsigned char *)malloc(w * h > 0 ? w * h : 1);
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

/* The encoder's output: a buffer of our own that grows by doubling, so the
   caller, not libjpeg, owns it on every path (libjpeg's memory destination
   keeps its buffer to itself until the encode finishes, so a failed encode
   leaked it). */
struct fs_jpeg_dest {
    struct jpeg_destination_mgr pub;
    unsigned char *buffer;
    size_t capacity;
    size_t size;
    /* The most the output may grow to; 0: no cap. */
    size_t max_output;
};

static void fs_jpeg_dest_init(j_compress_ptr cinfo) {
    struct fs_jpeg_dest *dest = (struct fs_jpeg_dest *)cinfo->dest;
    dest->capacity = 4096;
    dest->buffer = (unsigned char *)malloc(dest->capacity);
    if (!dest->buffer) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    dest->pub.next_output_byte = dest->buffer;
    dest->pub.free_in_buffer = dest->capacity;
}

static boolean fs_jpeg_dest_grow(j_compress_ptr cinfo) {
    struct fs_jpeg_dest *dest = (struct fs_jpeg_dest *)cinfo->dest;
    size_t grown = dest->capacity * 2;
    if (dest->max_output > 0 && grown > dest->max_output) {
        /* Fails like any libjpeg error: a longjmp to the encode's setjmp,
           with the buffer (grown already, perhaps) still the caller's. */
        struct fs_jpeg_error *err = (struct fs_jpeg_error *)cinfo->err;
        snprintf(err->message, sizeof err->message, "the JPEG would be larger than %zu bytes", dest->max_output);
        longjmp(err->jump, 1);
    }
    unsigned char *b = (unsigned char *)realloc(dest->buffer, grown);
    if (!b) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 1);
    dest->buffer = b;
    dest->pub.next_output_byte = b + dest->capacity;
    dest->pub.free_in_buffer = grown - dest->capacity;
    dest->capacity = grown;
    return TRUE;
}

static void fs_jpeg_dest_term(j_compress_ptr cinfo) {
    struct fs_jpeg_dest *dest = (struct fs_jpeg_dest *)cinfo->dest;
    dest->size = dest->capacity - dest->pub.free_in_buffer;
}

/* The encode behind the setjmp. `dest` belongs to the caller's frame, so its
   buffer is still known after a longjmp lands here. */
static int fs_jpeg_encode_guarded(struct fs_jpeg_dest *dest, const unsigned char *pixels, int width, int height,
                                  int components, int quality, int progressive, char *message, size_t message_size) {
    struct jpeg_compress_struct cinfo;
    struct fs_jpeg_error err;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&err, 0, sizeof err);
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = fs_jpeg_error_exit;
    err.pub.emit_message = fs_jpeg_emit_message;
    if (setjmp(err.jump)) {
        snprintf(message, message_size, "%s", err.message);
        jpeg_destroy_compress(&cinfo);
        return FS_JPEG_ERROR;
    }
    jpeg_create_compress(&cinfo);
    cinfo.dest = &dest->pub;
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
    jpeg_destroy_compress(&cinfo);
    return FS_JPEG_OK;
}

int fs_jpeg_encode(const unsigned char *pixels, int width, int height, int components,
                   int quality, int progressive, unsigned long max_output, unsigned char **out,
                   unsigned long *out_size, char *message, size_t message_size) {
    struct fs_jpeg_dest dest;
    memset(&dest, 0, sizeof dest);
    dest.max_output = (size_t)max_output;
    dest.pub.init_destination = fs_jpeg_dest_init;
    dest.pub.empty_output_buffer = fs_jpeg_dest_grow;
    dest.pub.term_destination = fs_jpeg_dest_term;
    *out = NULL;
    *out_size = 0;
    int rc = fs_jpeg_encode_guarded(&dest, pixels, width, height, components, quality, progressive, message, message_size);
    if (rc != FS_JPEG_OK) {
        free(dest.buffer);
        return rc;
    }
    *out = dest.buffer;
    *out_size = (unsigned long)dest.size;
    return FS_JPEG_OK;
}
