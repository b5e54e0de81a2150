/* stub */
#include "encap.h"
int lb_stub_encap(void);
int lb_stub_encap(void) { return 0; }
