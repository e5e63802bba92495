#ifndef FLOW_BENCHMARKS_PROCESS_REFERENCE_H
#define FLOW_BENCHMARKS_PROCESS_REFERENCE_H

#include <stdint.h>

/// P16's floor: starts `path` (no arguments, this process's environment) with `posix_spawn` and waits
/// for it with `waitpid`, `count` times in a row. Returns the nanoseconds it took, or 0 if a spawn
/// failed or a child did not exit with status 0.
uint64_t procref_spawn_and_wait(const char *path, int count);

#endif
