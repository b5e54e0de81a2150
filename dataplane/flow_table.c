/* stub */
#include "flow_table.h"
int lb_stub_flow_table(void);
int lb_stub_flow_table(void) { return 0; }
