#include <stddef.h>
#include <stdint.h>

/// libFuzzer's own driver (compiler-rt's FuzzerDriver): parses libFuzzer's
/// flags from argv and runs `callback` on every input. Linked in by
/// `-sanitize=fuzzer`.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
