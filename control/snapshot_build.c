/* stub */
#include "snapshot_build.h"
int lb_stub_snapshot_build(void);
int lb_stub_snapshot_build(void) { return 0; }
