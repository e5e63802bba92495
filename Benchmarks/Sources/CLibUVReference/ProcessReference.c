// P16's floor: what a C program does to run a program and collect its exit, with nothing around it.
#define _GNU_SOURCE
#include "ProcessReference.h"

#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static uint64_t procref_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

uint64_t procref_spawn_and_wait(const char *path, int count) {
    char *const arguments[] = {(char *)path, NULL};
    uint64_t started = procref_now();
    for (int index = 0; index < count; index++) {
        pid_t child;
        if (posix_spawn(&child, path, NULL, NULL, arguments, environ) != 0) return 0;
        int status;
        while (waitpid(child, &status, 0) < 0) {}
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 0;
    }
    return procref_now() - started;
}
