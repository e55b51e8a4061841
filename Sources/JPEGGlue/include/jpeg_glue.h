#ifndef FAMILY_SYNC_JPEG_GLUE_H
#define FAMILY_SYNC_JPEG_GLUE_H
#include <stddef.h>

/* libjpeg reports errors by calling error_exit, which must not return; Swift
   cannot unwind a longjmp, so the whole decode and encode run in C, behind a
   setjmp, and hand back a status and a message. */

enum {
    FS_JPEG_OK = 0,
    FS_JPEG_ERROR = 1,
    FS_JPEG_TOO_LARGE = 2,
    FS_JPEG_NO_MEMORY = 3,
};

/* Decodes a JPEG held in memory to 8-bit grayscale. The dimensions are
   checked against max_pixels before any pixel buffer is allocated; more than
   max_scans progressive scans (when > 0) is an error, and libjpeg's working
   memory is capped at max_memory (when > 0). On FS_JPEG_OK, *out holds
   width*height bytes the caller frees with free(); on any other status *out
   is NULL. *truncated is set when the data ended before the last scan line. */
int fs_jpeg_decode_gray(const unsigned char *data, unsigned long size,
                        unsigned long long max_pixels, int max_scans, long max_memory,
                        unsigned char **out, int *width, int *height,
                        int *truncated, int *warnings, char *message, size_t message_size);

/* Encodes 8-bit gray (components 1) or RGB (components 3) pixels as a JPEG in
   memory, failing (FS_JPEG_ERROR) when the output would grow past max_output
   bytes (when > 0). On FS_JPEG_OK, *out (*out_size bytes) is freed by the
   caller with free(); on an error nothing is left allocated and *out is NULL. */
int fs_jpeg_encode(const unsigned char *pixels, int width, int height, int components,
                   int quality, int progressive, unsigned long max_output, unsigned char **out,
                   unsigned long *out_size, char *message, size_t message_size);

#endif
