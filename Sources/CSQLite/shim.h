#ifndef FAMILY_SYNC_CSQLITE_SHIM_H
#define FAMILY_SYNC_CSQLITE_SHIM_H
#include <sqlite3.h>
/* SQLITE_TRANSIENT is a cast macro and does not import into Swift. */
static inline sqlite3_destructor_type fs_sqlite_transient(void) { return SQLITE_TRANSIENT; }
static inline sqlite3_destructor_type fs_sqlite_static(void) { return SQLITE_STATIC; }
#endif
