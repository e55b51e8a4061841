#ifndef FAMILY_SYNC_CZBAR_SHIM_H
#define FAMILY_SYNC_CZBAR_SHIM_H
#include <zbar.h>
/* zbar_fourcc is a function-like macro. */
static inline unsigned long fs_zbar_fourcc_y800(void) { return zbar_fourcc('Y', '8', '0', '0'); }
#endif
