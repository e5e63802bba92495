// Fault injection for the probe that sweeps libuv's error paths (Tests/Probes/FaultProbe).
//
// The probe executable links this file, so its definitions of the C library's calls come first in
// the symbol lookup of every shared library: libuv's calls to `read`, `accept4` or `getaddrinfo`
// land here. A call is faulted only when an armed plan picks it and it comes from inside libuv or from
// the library's own code in FlowSystem and FlowNet (which open files and read them on the thread pool
// themselves); the rest (the probe's harness, the Swift runtime's, the C library's own) go straight
// to the real function, found with dlsym(RTLD_NEXT). Never linked into a product.
#define _GNU_SOURCE
#include "CFaultInjection.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <uv.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
// The sanitizers' runtimes define these calls themselves: the probe reports the injector unavailable.
#define FLOW_FAULT_DISABLED 1
#endif
#endif

static flow_fault_plan plan;
static atomic_int armed;
static atomic_uint_fast64_t eligible_calls;
static atomic_uint_fast64_t injected_faults;
static uintptr_t libuv_start, libuv_end;
/// The process that armed the plan: a child forked by uv_spawn inherits the plan, and is left alone
/// (its calls between fork and exec are libuv's child side, not the process under test).
static pid_t armed_pid;

static uint64_t mix(uint64_t value) {
    value += 0x9E3779B97F4A7C15ull;
    value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
    value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
    return value ^ (value >> 31);
}

/// Whether the nth eligible call under the plan is faulted; `*random` gets a number for its details.
static int pick(uint64_t *random) {
    uint64_t index = atomic_fetch_add(&eligible_calls, 1) + 1;
    uint64_t hash = mix(plan.seed ^ mix(index));
    if (random) *random = mix(hash);
    int chosen = plan.nth ? index == plan.nth : (hash % 1000) < plan.per_mille;
    if (!chosen) return 0;
    uint64_t count = atomic_fetch_add(&injected_faults, 1);
    if (plan.limit && count >= plan.limit) {
        atomic_fetch_sub(&injected_faults, 1);
        return 0;
    }
    return 1;
}

/// The code of FlowSystem's and FlowNet's functions in this executable (the library is linked in
/// statically), sorted by start: a call returning into one of them is the library's own.
typedef struct {
    uintptr_t start, end;
} code_range;
static code_range *library_code;
static size_t library_code_count;

#ifndef FLOW_FAULT_DISABLED
static int from_library(uintptr_t address) {
    size_t low = 0, high = library_code_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (library_code[middle].start <= address) low = middle + 1; else high = middle;
    }
    return low > 0 && address < library_code[low - 1].end;
}

static int from_libuv_or_library(void *caller) {
    uintptr_t address = (uintptr_t)caller;
    return (address >= libuv_start && address < libuv_end) || from_library(address);
}
#endif

/// Whether a symbol is a function of FlowSystem or FlowNet: Swift's mangled names start with the
/// module's (`$s10FlowSystem…`, `$s7FlowNet…`), closures, thunks and local functions included.
static int names_library_code(const char *name) {
    return strncmp(name, "$s10FlowSystem", 14) == 0 || strncmp(name, "$s7FlowNet", 10) == 0;
}

static int compare_ranges(const void *left, const void *right) {
    uintptr_t a = ((const code_range *)left)->start, b = ((const code_range *)right)->start;
    return a < b ? -1 : a > b;
}

static int find_executable_bias(struct dl_phdr_info *info, size_t size, void *bias) {
    (void)size;
    *(uintptr_t *)bias = info->dlpi_addr;   // the first object listed is the executable
    return 1;
}

/// Reads the ranges of the library's functions from the executable's symbol table (`.symtab`, which
/// holds the local symbols of private functions and closures too; dladdr sees only exported ones).
static void find_library_code(void) {
    uintptr_t bias = 0;
    dl_iterate_phdr(find_executable_bias, &bias);
    int descriptor = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return;
    struct stat status;
    void *image = MAP_FAILED;
    if (fstat(descriptor, &status) == 0) image = mmap(NULL, (size_t)status.st_size, PROT_READ, MAP_PRIVATE, descriptor, 0);
    close(descriptor);
    if (image == MAP_FAILED) return;
    const char *bytes = image;
    const ElfW(Ehdr) *header = image;
    const ElfW(Shdr) *sections = (const ElfW(Shdr) *)(bytes + header->e_shoff);
    size_t capacity = 0;
    for (int index = 0; index < header->e_shnum; index++) {
        if (sections[index].sh_type != SHT_SYMTAB) continue;
        const ElfW(Sym) *symbols = (const ElfW(Sym) *)(bytes + sections[index].sh_offset);
        size_t count = sections[index].sh_size / sizeof(ElfW(Sym));
        const char *names = bytes + sections[sections[index].sh_link].sh_offset;
        for (size_t symbol = 0; symbol < count; symbol++) {
            const ElfW(Sym) *entry = &symbols[symbol];
            if (ELF64_ST_TYPE(entry->st_info) != STT_FUNC || entry->st_size == 0 || entry->st_shndx == SHN_UNDEF) continue;
            if (!names_library_code(names + entry->st_name)) continue;
            if (library_code_count == capacity) {
                capacity = capacity ? capacity * 2 : 1024;
                code_range *grown = realloc(library_code, capacity * sizeof(code_range));
                if (!grown) break;
                library_code = grown;
            }
            uintptr_t start = bias + entry->st_value;
            library_code[library_code_count++] = (code_range){ start, start + entry->st_size };
        }
    }
    munmap(image, (size_t)status.st_size);
    qsort(library_code, library_code_count, sizeof(code_range), compare_ranges);
}

static int find_libuv(struct dl_phdr_info *info, size_t size, void *base) {
    (void)size;
    if ((void *)info->dlpi_addr != base) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type != PT_LOAD || !(header->p_flags & PF_X)) continue;
        uintptr_t start = info->dlpi_addr + header->p_vaddr;
        if (!libuv_start || start < libuv_start) libuv_start = start;
        if (start + header->p_memsz > libuv_end) libuv_end = start + header->p_memsz;
    }
    return 1;
}

void flow_fault_arm(flow_fault_plan new_plan) {
    atomic_store(&armed, 0);
    if (!libuv_end) {
        Dl_info info;
        if (dladdr((void *)uv_version, &info) && info.dli_fbase) dl_iterate_phdr(find_libuv, info.dli_fbase);
        find_library_code();
    }
    plan = new_plan;
    armed_pid = getpid();
    atomic_store(&eligible_calls, 0);
    atomic_store(&injected_faults, 0);
    atomic_store(&armed, new_plan.action != flow_fault_off);
}

void flow_fault_disarm(void) { atomic_store(&armed, 0); }
uint64_t flow_fault_injected(void) { return atomic_load(&injected_faults); }
uint64_t flow_fault_eligible(void) { return atomic_load(&eligible_calls); }
uint64_t flow_fault_library_functions(void) { return library_code_count; }

// MARK: - The allocator

/// Whether a libuv allocation is to fail.
static int fail_allocation(void) {
    return atomic_load(&armed) && plan.action == flow_fault_allocation && getpid() == armed_pid && pick(NULL);
}

static void *fault_malloc(size_t size) {
    if (fail_allocation()) return NULL;
    return malloc(size);
}

static void *fault_realloc(void *pointer, size_t size) {
    if (size && fail_allocation()) return NULL;
    return realloc(pointer, size);
}

static void *fault_calloc(size_t count, size_t size) {
    if (fail_allocation()) return NULL;
    return calloc(count, size);
}

int flow_fault_install_allocator(void) { return uv_replace_allocator(fault_malloc, fault_realloc, fault_calloc, free); }

#ifndef FLOW_FAULT_DISABLED

// MARK: - The calls

#define REAL(name) \
    static __typeof__(name) *real_##name; \
    if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/// The class of calls `descriptor` belongs to for an I/O call: stream or file I/O, 0 for the rest
/// (libuv's eventfd and signal pipe, whose failures it treats as fatal by design).
static uint32_t io_class(int descriptor) {
    struct stat status;
    if (fstat(descriptor, &status) != 0) return 0;
    if (S_ISSOCK(status.st_mode)) return flow_fault_calls_stream_io;
    if (S_ISREG(status.st_mode)) return flow_fault_calls_file_io;
    return 0;
}

/// The class of a `recvmsg` or `sendmsg` on `descriptor`: datagrams, or a stream (an IPC pipe).
static uint32_t message_class(int descriptor) {
    int type = 0;
    socklen_t length = sizeof type;
    if (getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) != 0) return 0;
    return type == SOCK_DGRAM ? flow_fault_calls_datagram : flow_fault_calls_stream_io;
}

/// The class of a call, worked out only while a plan is armed (a disarmed injector costs one load).
#define ARMED_OR_ZERO(class) (atomic_load(&armed) ? (class) : 0u)

/// What to do to a call of class `class` from `caller`: 0 (nothing), or the plan's action.
static flow_fault_action decide(uint32_t class, void *caller, int can_shorten, uint64_t *random) {
    if (!atomic_load(&armed) || !(plan.calls & class) || !from_libuv_or_library(caller)) return flow_fault_off;
    if (getpid() != armed_pid) return flow_fault_off;
    if (plan.action == flow_fault_allocation) return flow_fault_off;
    if (plan.action == flow_fault_short && !can_shorten) return flow_fault_off;
    return pick(random) ? plan.action : flow_fault_off;
}

/// Whether a read of `descriptor` may be cut short: not once its peer has hung up. libuv takes a
/// partial read with POLLHUP for the end of the stream (uv__stream_io), relying on the kernel to hand
/// over all it holds in one read then; a shortened read there would lose the rest, which no kernel does.
static int may_shorten_read(int descriptor, size_t count) {
    if (count < 2 || !atomic_load(&armed)) return 0;
    struct pollfd watched = { .fd = descriptor, .events = POLLIN | POLLRDHUP };
    if (poll(&watched, 1, 0) < 0) return 0;
    return !(watched.revents & (POLLHUP | POLLRDHUP));
}

/// A count between 1 and `count - 1`.
static size_t shorter(size_t count, uint64_t random) { return 1 + (size_t)(random % (count - 1)); }

/// Copies `iov` into `copy` cut to `total` bytes; returns the new count of buffers.
static int cut(const struct iovec *iov, int count, size_t total, struct iovec *copy) {
    int kept = 0;
    for (int i = 0; i < count && total > 0; i++) {
        copy[kept] = iov[i];
        if (copy[kept].iov_len > total) copy[kept].iov_len = total;
        total -= copy[kept].iov_len;
        kept++;
    }
    return kept;
}

static size_t iov_total(const struct iovec *iov, int count) {
    size_t total = 0;
    for (int i = 0; i < count; i++) total += iov[i].iov_len;
    return total;
}

#define FAIL(value) do { errno = plan.errno_value; return (value); } while (0)

ssize_t read(int descriptor, void *buffer, size_t count) {
    REAL(read);
    uint64_t random;
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), may_shorten_read(descriptor, count), &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: return real_read(descriptor, buffer, shorter(count, random));
    default: return real_read(descriptor, buffer, count);
    }
}

ssize_t write(int descriptor, const void *buffer, size_t count) {
    REAL(write);
    uint64_t random;
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), count > 1, &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: return real_write(descriptor, buffer, shorter(count, random));
    default: return real_write(descriptor, buffer, count);
    }
}

ssize_t pread64(int descriptor, void *buffer, size_t count, off64_t offset) {
    REAL(pread64);
    uint64_t random;
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), count > 1, &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: return real_pread64(descriptor, buffer, shorter(count, random), offset);
    default: return real_pread64(descriptor, buffer, count, offset);
    }
}

ssize_t pwrite64(int descriptor, const void *buffer, size_t count, off64_t offset) {
    REAL(pwrite64);
    uint64_t random;
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), count > 1, &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: return real_pwrite64(descriptor, buffer, shorter(count, random), offset);
    default: return real_pwrite64(descriptor, buffer, count, offset);
    }
}

// The symbols Swift code calls (FlowSystem's `pread`, `preadv`, `Glibc.open`, `stat`): libuv calls the
// `…64` ones above, which are the same functions under other names.

ssize_t pread(int descriptor, void *buffer, size_t count, off_t offset) {
    REAL(pread);
    uint64_t random;
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), count > 1, &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: return real_pread(descriptor, buffer, shorter(count, random), offset);
    default: return real_pread(descriptor, buffer, count, offset);
    }
}

ssize_t pwrite(int descriptor, const void *buffer, size_t count, off_t offset) {
    REAL(pwrite);
    uint64_t random;
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), count > 1, &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: return real_pwrite(descriptor, buffer, shorter(count, random), offset);
    default: return real_pwrite(descriptor, buffer, count, offset);
    }
}

ssize_t preadv(int descriptor, const struct iovec *iov, int count, off_t offset) {
    REAL(preadv);
    uint64_t random;
    size_t total = iov_total(iov, count);
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), total > 1 && count <= 1024, &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: {
        struct iovec copy[1024];
        return real_preadv(descriptor, copy, cut(iov, count, shorter(total, random), copy), offset);
    }
    default: return real_preadv(descriptor, iov, count, offset);
    }
}

ssize_t pwritev(int descriptor, const struct iovec *iov, int count, off_t offset) {
    REAL(pwritev);
    uint64_t random;
    size_t total = iov_total(iov, count);
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), total > 1 && count <= 1024, &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: {
        struct iovec copy[1024];
        return real_pwritev(descriptor, copy, cut(iov, count, shorter(total, random), copy), offset);
    }
    default: return real_pwritev(descriptor, iov, count, offset);
    }
}

ssize_t readv(int descriptor, const struct iovec *iov, int count) {
    REAL(readv);
    uint64_t random;
    size_t total = iov_total(iov, count);
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), count <= 1024 && may_shorten_read(descriptor, total), &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: {
        struct iovec copy[1024];
        return real_readv(descriptor, copy, cut(iov, count, shorter(total, random), copy));
    }
    default: return real_readv(descriptor, iov, count);
    }
}

ssize_t writev(int descriptor, const struct iovec *iov, int count) {
    REAL(writev);
    uint64_t random;
    size_t total = iov_total(iov, count);
    switch (decide(ARMED_OR_ZERO(io_class(descriptor)), __builtin_return_address(0), total > 1 && count <= 1024, &random)) {
    case flow_fault_errno: FAIL(-1);
    case flow_fault_short: {
        struct iovec copy[1024];
        return real_writev(descriptor, copy, cut(iov, count, shorter(total, random), copy));
    }
    default: return real_writev(descriptor, iov, count);
    }
}

ssize_t recvmsg(int descriptor, struct msghdr *message, int flags) {
    REAL(recvmsg);
    if (decide(ARMED_OR_ZERO(message_class(descriptor)), __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_recvmsg(descriptor, message, flags);
}

ssize_t sendmsg(int descriptor, const struct msghdr *message, int flags) {
    REAL(sendmsg);
    if (decide(ARMED_OR_ZERO(message_class(descriptor)), __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_sendmsg(descriptor, message, flags);
}

int accept4(int descriptor, struct sockaddr *address, socklen_t *length, int flags) {
    REAL(accept4);
    if (decide(flow_fault_calls_accept, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_accept4(descriptor, address, length, flags);
}

int connect(int descriptor, const struct sockaddr *address, socklen_t length) {
    REAL(connect);
    if (decide(flow_fault_calls_connect, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_connect(descriptor, address, length);
}

int socket(int domain, int type, int protocol) {
    REAL(socket);
    if (decide(flow_fault_calls_descriptors, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_socket(domain, type, protocol);
}

int socketpair(int domain, int type, int protocol, int descriptors[2]) {
    REAL(socketpair);
    if (decide(flow_fault_calls_descriptors, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_socketpair(domain, type, protocol, descriptors);
}

int pipe2(int descriptors[2], int flags) {
    REAL(pipe2);
    if (decide(flow_fault_calls_descriptors, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_pipe2(descriptors, flags);
}

int open64(const char *path, int flags, ...) {
    REAL(open64);
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list arguments;
        va_start(arguments, flags);
        mode = va_arg(arguments, mode_t);
        va_end(arguments);
    }
    if (decide(flow_fault_calls_open, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_open64(path, flags, mode);
}

int open(const char *path, int flags, ...) {
    REAL(open);
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list arguments;
        va_start(arguments, flags);
        mode = va_arg(arguments, mode_t);
        va_end(arguments);
    }
    if (decide(flow_fault_calls_open, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_open(path, flags, mode);
}

/// FlowSystem's look at a path before opening it (`FileSystem.open`).
int stat(const char *restrict path, struct stat *restrict status) {
    REAL(stat);
    if (decide(flow_fault_calls_open, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_stat(path, status);
}

int __open64_2(const char *path, int flags);
int __open64_2(const char *path, int flags) {
    REAL(__open64_2);
    if (decide(flow_fault_calls_open, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real___open64_2(path, flags);
}

int mkstemp64(char *template);
int mkstemp64(char *template) {
    REAL(mkstemp64);
    if (decide(flow_fault_calls_open, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_mkstemp64(template);
}

int rename(const char *source, const char *destination) {
    REAL(rename);
    if (decide(flow_fault_calls_rename, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_rename(source, destination);
}

int fsync(int descriptor) {
    REAL(fsync);
    if (decide(flow_fault_calls_rename, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_fsync(descriptor);
}

int fdatasync(int descriptor) {
    REAL(fdatasync);
    if (decide(flow_fault_calls_rename, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_fdatasync(descriptor);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **result) {
    REAL(getaddrinfo);
    if (decide(flow_fault_calls_lookup, __builtin_return_address(0), 0, NULL) == flow_fault_errno) {
        return plan.errno_value == ENOMEM ? EAI_MEMORY : EAI_AGAIN;
    }
    return real_getaddrinfo(node, service, hints, result);
}

pid_t fork(void) {
    REAL(fork);
    if (decide(flow_fault_calls_spawn, __builtin_return_address(0), 0, NULL) == flow_fault_errno) FAIL(-1);
    return real_fork();
}

int flow_fault_available(void) { return 1; }
#else
int flow_fault_available(void) { return 0; }
#endif
