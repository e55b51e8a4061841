#ifndef FAMILY_SYNC_CZXING_SHIM_H
#define FAMILY_SYNC_CZXING_SHIM_H
/* ZXing-C++ is a C++ library: only ZXingBridge includes its headers. This
 * module carries its pkg-config flags and the link to libZXing. */
#include <ZXing/ZXVersion.h>
#endif
