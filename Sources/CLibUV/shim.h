#ifndef FLOW_CLIBUV_SHIM_H
#define FLOW_CLIBUV_SHIM_H
// The libuv headers as Swift sees them. Everything libuv offers is reached through this one include.
#include <uv.h>
#endif
