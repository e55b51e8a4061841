#ifndef FAMILY_SYNC_SYSTEM_GLUE_H
#define FAMILY_SYNC_SYSTEM_GLUE_H

/* glibc calls that Swift's Glibc module does not bring: those declared only
   with _GNU_SOURCE, which a Swift module cannot set for the C library it
   imports (direct I/O, which moves a buffer to the disk without copying it
   into the page cache; punching a hole, which gives a file's unused range
   back to the file system), and malloc's tuning, in <malloc.h>. And
   OpenSSL's set-up for the tools (openssl_lifetime.c). */

/* Opens `path` for writing with O_DIRECT (and O_NOFOLLOW, O_CLOEXEC), never
   creating it. Returns the descriptor, or -1 with errno set (EINVAL where
   the file system does not do direct I/O). */
int fs_open_direct_write(const char *path);

/* Frees the bytes [offset, offset + length) of the file: they read as zeros
   after, and the file keeps its size. Returns 0, or -1 with errno set
   (EOPNOTSUPP where the file system cannot punch holes). */
int fs_punch_hole(int fd, long long offset, long long length);

/* Limits malloc to one arena for the whole process: the tools run a thread or
   two at a time, and each further arena is memory its thread keeps. */
void fs_one_malloc_arena(void);

/* OpenSSL's first initialisation, for a tool to call before any other use of
   OpenSSL (openssl_lifetime.c says what it turns on and off). */
void fs_openssl_set_up(void);

/* Loads OpenSSL's error texts, once, for a caller about to put an error into
   words: a tool starts without them (openssl_lifetime.c). */
void fs_openssl_error_texts(void);

#endif
