#ifndef FLOW_CLIBPQ_SHIM_H
#define FLOW_CLIBPQ_SHIM_H
// libpq's header as Swift sees it: FlowJobsPostgres reaches the system's libpq through this one include.
#include <libpq-fe.h>
#endif
