#ifndef FLOW_CSQLITE_SHIM_H
#define FLOW_CSQLITE_SHIM_H
// SQLite's header as Swift sees it: FlowJobs reaches the system's libsqlite3 through this one include.
#include <sqlite3.h>
#endif
