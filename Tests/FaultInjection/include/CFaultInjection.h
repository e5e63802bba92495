#ifndef FLOW_FAULT_INJECTION_H
#define FLOW_FAULT_INJECTION_H

#include <stdint.h>

/// What an armed injector does to the calls it picks.
typedef enum {
    /// Nothing: every call goes through.
    flow_fault_off = 0,
    /// The call fails with `errno_value` without reaching the kernel (close still closes).
    flow_fault_errno = 1,
    /// The call transfers fewer bytes than asked (at least one).
    flow_fault_short = 2,
    /// libuv's allocator returns NULL.
    flow_fault_allocation = 3,
} flow_fault_action;

/// Which calls a plan may pick (a bit mask).
enum {
    flow_fault_calls_stream_io = 1 << 0,   ///< read, write, readv, writev on sockets
    flow_fault_calls_file_io = 1 << 1,     ///< read, write, pread, pwrite, readv, writev, preadv, pwritev on regular files
    flow_fault_calls_datagram = 1 << 2,    ///< recvmsg, sendmsg on sockets
    flow_fault_calls_accept = 1 << 3,      ///< accept4
    flow_fault_calls_connect = 1 << 4,     ///< connect
    flow_fault_calls_open = 1 << 5,        ///< open, open64, __open64_2, mkstemp64, stat
    flow_fault_calls_descriptors = 1 << 6, ///< socket, socketpair, pipe2
    flow_fault_calls_rename = 1 << 7,      ///< rename, fsync, fdatasync
    flow_fault_calls_lookup = 1 << 8,      ///< getaddrinfo (fails with EAI_AGAIN, or EAI_MEMORY for ENOMEM)
    flow_fault_calls_spawn = 1 << 9,       ///< fork
};

/// A plan: which calls, what to do to them, and which of them, deterministically from `seed`.
typedef struct {
    flow_fault_action action;
    /// The errno of `flow_fault_errno`.
    int errno_value;
    /// The calls eligible (flow_fault_calls_*); ignored for allocations.
    uint32_t calls;
    uint64_t seed;
    /// When non-zero, only the nth eligible call (1-based) is faulted.
    uint64_t nth;
    /// Otherwise each eligible call is faulted with this probability, in thousandths.
    uint32_t per_mille;
    /// The most faults injected under this plan (0: no limit).
    uint64_t limit;
} flow_fault_plan;

/// Replaces libuv's allocator with the injector's (which passes through until a plan says otherwise).
/// Call first thing in `main`, before libuv allocates anything. Returns libuv's status.
int flow_fault_install_allocator(void);

/// Arms `plan`, resetting the counters. Only calls made from inside libuv, or from FlowSystem's and
/// FlowNet's own code, are eligible.
void flow_fault_arm(flow_fault_plan plan);

/// Whether the calls can be faulted in this build (not under a sanitizer, whose runtime defines them).
int flow_fault_available(void);

/// Disarms the injector: every call goes through again.
void flow_fault_disarm(void);

/// How many faults were injected since the last `flow_fault_arm`.
uint64_t flow_fault_injected(void);

/// How many eligible calls were seen since the last `flow_fault_arm`.
uint64_t flow_fault_eligible(void);

/// How many functions of FlowSystem and FlowNet the injector found in the executable's symbol table
/// (after the first `flow_fault_arm`): 0 means it can fault only libuv's calls.
uint64_t flow_fault_library_functions(void);

#endif
