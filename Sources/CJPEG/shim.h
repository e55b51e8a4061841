#ifndef FAMILY_SYNC_CJPEG_SHIM_H
#define FAMILY_SYNC_CJPEG_SHIM_H
/* libjpeg itself; the setjmp-guarded decode and encode live in the JPEGGlue target. */
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>
#endif
