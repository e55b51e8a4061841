#define _GNU_SOURCE 1
#include <fcntl.h>
#include <malloc.h>
#include "system_glue.h"

int fs_open_direct_write(const char *path) {
    return open(path, O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC);
}

int fs_punch_hole(int fd, long long offset, long long length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length);
}

void fs_one_malloc_arena(void) {
    mallopt(M_ARENA_MAX, 1);
}
