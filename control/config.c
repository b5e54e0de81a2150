/* stub */
#include "config.h"
int lb_stub_config(void);
int lb_stub_config(void) { return 0; }
