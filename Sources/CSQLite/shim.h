#ifndef FAMILY_SYNC_CSQLITE_SHIM_H
#define FAMILY_SYNC_CSQLITE_SHIM_H
#include <sqlite3.h>
/* SQLITE_TRANSIENT is a cast macro and does not import into Swift. */
static inline sqlite3_destructor_type fs_sqlite_transient(void) { return SQLITE_TRANSIENT; }
static inline sqlite3_destructor_type fs_sqlite_static(void) { return SQLITE_STATIC; }
/* sqlite3_db_config is variadic, which Swift cannot call. Turns off a
   connection's lookaside memory (about 120 KiB kept per connection) for
   connections that run a few small statements. */
static inline int fs_sqlite_no_lookaside(sqlite3 *db) { return sqlite3_db_config(db, SQLITE_DBCONFIG_LOOKASIDE, (void *)0, 0, 0); }
#endif
